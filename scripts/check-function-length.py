#!/usr/bin/env python3
"""List the functions in C sources longer than a limit (lines from the opening brace to the
closing one, both counted); exit 1 when there is one. Used by .ci/run on production code:
docs/architecture.md, "What keeps it so". Comments, strings and character literals are skipped
so that braces inside them do not count; a function is a top-level brace block whose header
(the text since the previous top-level ';', '}' or preprocessor line) ends in ')'."""
import re
import sys


def strip(text):
    """The text with comments, strings and char literals blanked, newlines kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j]) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    text = strip(open(path, encoding="utf-8").read())
    # preprocessor lines are no part of a header
    text = re.sub(r"(?m)^[ \t]*#.*$", lambda m: " " * len(m.group(0)), text)
    depth, header, line, start, name = 0, "", 1, 0, None
    for c in text:
        if c == "\n":
            line += 1
        if depth == 0:
            if c == "{":
                h = header.strip()
                m = re.search(r"([A-Za-z_]\w*)\s*\([^()]*(\([^()]*\)[^()]*)*\)\s*$", h)
                name = m.group(1) if m else None
                start = line
                depth = 1
            elif c in ";}":
                header = ""
            else:
                header += c
        else:
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    if name:
                        yield name, start, line - start + 1
                    header = ""
    return


def main():
    limit = int(sys.argv[1])
    long = []
    for path in sys.argv[2:]:
        for name, start, n in functions(path):
            if n > limit:
                long.append((n, f"{path}:{start}: {name} ({n} lines)"))
    for n, what in sorted(long, reverse=True):
        print(what)
    return 1 if long else 0


if __name__ == "__main__":
    sys.exit(main())
