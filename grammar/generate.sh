#!/bin/sh
# Generates the C++ parser of the .pos language from Pos.g4 into OUT_DIR with
# Debian's `antlr4` tool (Java). The build runs it; tools/gpu/prepare.sh runs
# it to carry the parser to a machine without Java (POSC_PARSER_DIR).
#   grammar/generate.sh OUT_DIR [ANTLR4_TOOL]
set -eu
out=$1
tool=${2:-antlr4}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
"$tool" -Dlanguage=Cpp -visitor -no-listener -package posc::grammar -Xexact-output-dir -o "$out" "$here/Pos.g4"
