/* cli/suggest.c: "did you mean ...?" for an unknown command or option, as git and curl say it:
 * the closest name by edit distance (insertions, deletions, substitutions and swaps of two
 * neighbours), or the one name the word begins. */
#include <string.h>

#include "options.h"

#define SUGGEST_MAX_LEN 64

/* the optimal string alignment distance between a[0..la) and b[0..lb), both short */
static size_t distance(const char *a, size_t la, const char *b, size_t lb) {
    size_t d[SUGGEST_MAX_LEN + 1][SUGGEST_MAX_LEN + 1];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[la][lb];
}

const char *cli_closest(const char *word, size_t len, const char *const *names, size_t n) {
    if (len == 0 || len > SUGGEST_MAX_LEN)
        return NULL;
    const char *best = NULL, *prefixed = NULL;
    size_t best_d = (size_t)-1, n_prefixed = 0;
    for (size_t i = 0; i < n; i++) {
        size_t ln = strlen(names[i]);
        if (ln > SUGGEST_MAX_LEN)
            continue;
        if (len >= 3 && ln > len && strncmp(names[i], word, len) == 0) {
            prefixed = names[i];
            n_prefixed++;
        }
        size_t d = distance(word, len, names[i], ln);
        if (d < best_d) {
            best_d = d;
            best = names[i];
        }
    }
    /* a typo: at most one edit in four letters, two at most */
    size_t allowed = len / 4 < 1 ? 1 : len / 4 > 2 ? 2 : len / 4;
    if (best && best_d <= allowed)
        return best;
    return n_prefixed == 1 ? prefixed : NULL;
}
