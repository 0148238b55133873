/* replay_main.c: runs a fuzz target's LLVMFuzzerTestOneInput over files and folders without
 * libFuzzer, so the ordinary build (gcc or clang, ctest) replays every seed and every input a
 * fuzzer once crashed on (tests/fuzz/regressions/<target>/) as a regression test. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return 1;
    }
    uint8_t *data = NULL;
    size_t size = 0, cap = 0;
    for (;;) {
        if (size == cap) {
            cap = cap ? 2 * cap : 4096;
            uint8_t *grown = realloc(data, cap);
            if (!grown) {
                free(data);
                fclose(f);
                fprintf(stderr, "replay: out of memory reading %s\n", path);
                return 1;
            }
            data = grown;
        }
        size_t got = fread(data + size, 1, cap - size, f);
        size += got;
        if (got == 0)
            break;
    }
    int failed = ferror(f);
    fclose(f);
    if (!failed)
        LLVMFuzzerTestOneInput(data, size);
    free(data);
    return failed;
}

static int replay_path(const char *path, size_t *count) {
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "replay: no such file or folder: %s\n", path);
        return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
        (*count)++;
        return replay_file(path);
    }
    DIR *dir = opendir(path);
    if (!dir) {
        fprintf(stderr, "replay: cannot read folder %s\n", path);
        return 1;
    }
    int failed = 0;
    for (struct dirent *e; (e = readdir(dir));) {
        if (e->d_name[0] == '.')
            continue;
        size_t len = strlen(path) + strlen(e->d_name) + 2;
        char *child = malloc(len);
        if (!child) {
            failed = 1;
            break;
        }
        snprintf(child, len, "%s/%s", path, e->d_name);
        failed |= replay_path(child, count);
        free(child);
    }
    closedir(dir);
    return failed;
}

int main(int argc, char **argv) {
    size_t count = 0;
    int failed = 0;
    for (int i = 1; i < argc; i++)
        failed |= replay_path(argv[i], &count);
    printf("replayed %zu inputs\n", count);
    return failed;
}
