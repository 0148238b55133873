#!/bin/sh
# t2100-schema: the sample profiles and the plans we write match docs/schema/; a document
# that breaks the schema is caught (the checker can fail).
. "$(dirname "$0")/lib.sh"
CHECK="python3 tests/tools/schema_check.py"
for f in samples/profiles/*.json; do
    expect_code "$f matches the profile schema" 0 $CHECK docs/schema/profile.schema.json "$f"
done
expect_code "devices sample matches its schema" 0 $CHECK docs/schema/devices.schema.json samples/devices/two-speeds-8.json
expect_code "links sample matches its schema" 0 $CHECK docs/schema/links.schema.json samples/links/two-nodes-8.json
for args in "-s 4 --chunks 2 --solver uniform" "-s 4 --solver ilp" "-s 8 --memory-limit 30GB --solver ilp --recompute auto" "-s 8 --devices samples/devices/two-speeds-8.json --links samples/links/two-nodes-8.json" "-s 8 --devices samples/devices/two-speeds-8.json --links samples/links/two-nodes-8.json --comm blocking --objective iteration" "-s 8 -m auto --target-efficiency 0.8" "-s 4" "-s 8 --memory-limit 80GB" "-s 4 --solver uniform" "-s 2 --objective variance"; do
    # shellcheck disable=SC2086
    "$STAGEPART" partition samples/profiles/llama3-8b.json $args -o "$TMP/plan.json" >/dev/null
    expect_code "plan ($args) matches the plan schema" 0 $CHECK docs/schema/plan.schema.json "$TMP/plan.json"
done
sed 's/"optimal":[[:space:]]*[a-z]*/"optimal": "yes"/' "$TMP/plan.json" >"$TMP/bad.json"
expect_code "a broken plan fails the schema" 1 $CHECK docs/schema/plan.schema.json "$TMP/bad.json"
# the example profile in docs/formats.md is a valid profile
python3 -c 'import re,sys; t=open("docs/formats.md").read(); print(re.search(r"```json\n(.*?)```", t, re.S).group(1))' >"$TMP/doc-example.json"
expect_code "docs/formats.md example matches the schema" 0 $CHECK docs/schema/profile.schema.json "$TMP/doc-example.json"
expect_code "docs/formats.md example is accepted" 0 "$STAGEPART" partition "$TMP/doc-example.json" -s 2
test_done
