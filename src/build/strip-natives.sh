#!/bin/sh
# Strips the debug info from the natives the jar carries and keeps it beside them:
#   strip-natives.sh <lib dir> <debug dir> <debug zip> <jar tool>
# Each <lib dir>/*.so loses its .debug_* sections and gains a .gnu_debuglink to
# <name>.so.debug in <debug dir>; the debug files are zipped into <debug zip> (the
# ptorun-<version>-debug-symbols.zip artifact, docs/java.md). A library stripped by an
# earlier run (make relinks only what changed) keeps its debug file. Runs in
# prepare-package, after the tests ran against the unstripped libraries.
set -eu
lib_dir=$1 debug_dir=$2 debug_zip=$3 jar_tool=$4
mkdir -p "$debug_dir"
for so in "$lib_dir"/*.so; do
    name=$(basename "$so")
    if readelf -S "$so" | grep -q '\.debug_info'; then
        objcopy --only-keep-debug "$so" "$debug_dir/$name.debug"
        # the link is made from the debug file's folder so it records its bare name
        (cd "$debug_dir" && objcopy --strip-debug --add-gnu-debuglink="$name.debug" "$so")
    elif [ ! -f "$debug_dir/$name.debug" ]; then
        echo "strip-natives: $so has no debug info and no kept debug file" >&2
        exit 1
    fi
done
rm -f "$debug_zip"
"$jar_tool" --create --no-manifest --file "$debug_zip" -C "$debug_dir" .
