#!/bin/sh
# The `weather` tool's activity: the resolved call on stdin, the result on stdout.
city=$(sed -n 's/.*"city":"\([^"]*\)".*/\1/p')
printf '{"city":"%s","sky":"sunny","high_c":31}\n' "$city"
