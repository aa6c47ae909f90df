#!/bin/sh
# Writes the man page of `myelin` (section 1) from its --help text: the usage line as SYNOPSIS,
# the rest verbatim. help2man is not needed. Usage: man_from_help.sh MYELIN VERSION OUT
set -eu
myelin=$1
version=$2
out=$3
help=$("$myelin" --help)
{
    echo ".TH MYELIN 1 \"\" \"myelin $version\" \"User Commands\""
    echo ".SH NAME"
    printf '%s\n' 'myelin \- build, train, evaluate and export neural networks without a display'
    echo ".SH SYNOPSIS"
    echo ".B myelin"
    printf '%s\n' '\fIcommand\fR [\fIarguments\fR]'
    echo ".SH DESCRIPTION"
    echo "The headless tool of Myelin Studio. Its help:"
    echo ".PP"
    echo ".nf"
    # Roff: a backslash is written \e; a line starting with . or ' is protected with \&.
    printf '%s\n' "$help" | sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"
    echo ".fi"
    echo ".SH SEE ALSO"
    echo ".BR myelin-studio (1)"
} > "$out"
