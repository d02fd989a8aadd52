"""Copies a .tk file to a name with arbitrary characters and compiles it.

Usage: compile-named.py DIR NAME SOURCE OUTPUT [TKC OPTIONS...]
NAME takes Python escapes (\\n, \\r, \\x1b...), which a RUN line cannot
spell; the exit status is tkc's.
"""
import os
import shutil
import subprocess
import sys

directory, name, source, output = sys.argv[1:5]
path = os.path.join(directory, name.encode().decode("unicode_escape"))
shutil.copyfile(source, path)
sys.exit(subprocess.call(["tkc", path, "-o", output] + sys.argv[5:]))
