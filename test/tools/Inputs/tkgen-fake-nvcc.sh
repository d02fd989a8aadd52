#!/bin/sh
# Stands in for nvcc in tkgen.test: reports an error at the .tk line where
# kernel gen4x1 starts (as tkc's #line directives make nvcc do), and
# compiles anything without it.
for a; do case "$a" in *.cu) cu="$a" ;; esac; done
tk="${cu%.sm_80.cu}.tk"
line=$(grep -n "^kernel gen4x1(" "$tk" | cut -d: -f1)
[ -z "$line" ] && exit 0
echo "$tk($line): error: broken" >&2
exit 1
