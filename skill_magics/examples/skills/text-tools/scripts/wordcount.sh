#!/usr/bin/env bash
# Count lines, words, characters and the most frequent words of a text.
# Input: JSON {"text": "...", "top": N} or plain text on stdin, or --file PATH [--top N].
set -euo pipefail

top=5
file=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --top) top="$2"; shift 2 ;;
    --file) file="$2"; shift 2 ;;
    *) echo "unknown option: $1 (use --file PATH and --top N)" >&2; exit 2 ;;
  esac
done

if [[ -n "$file" ]]; then
  text=$(cat -- "$file"; printf x)
else
  text=$(cat; printf x)  # the x keeps trailing newlines, which $(...) would drop
fi
text=${text%x}

# JSON input: take the "text" string and decode its escapes (no jq needed).
if [[ "$text" =~ ^[[:space:]]*\{ ]]; then
  if [[ "$text" =~ \"top\"[[:space:]]*:[[:space:]]*([0-9]+) ]]; then
    top=${BASH_REMATCH[1]}
  fi
  if [[ "$text" =~ \"text\"[[:space:]]*:[[:space:]]*\"(([^\"\\]|\\.)*)\" ]]; then
    raw=${BASH_REMATCH[1]}
    raw=${raw//\\\"/\"}
    raw=${raw//\\\//\/}
    text=$(printf '%b' "$raw"; printf x)
    text=${text%x}
  else
    echo 'JSON input needs a "text" string, e.g. {"text": "hello world"}' >&2
    exit 2
  fi
fi

[[ "$top" =~ ^[0-9]+$ ]] || { echo "--top must be a number, got '$top'" >&2; exit 2; }

lines=$(printf '%s' "$text" | wc -l)
# A last line without a newline still counts as a line.
if [[ -n "$text" && "${text: -1}" != $'\n' ]]; then lines=$((lines + 1)); fi
words=$(printf '%s' "$text" | wc -w)
chars=$(printf '%s' "$text" | LC_ALL=C.UTF-8 wc -m)
bytes=$(printf '%s' "$text" | LC_ALL=C wc -c)

top_json=""
if [[ "$top" -gt 0 ]]; then
  while read -r count word; do
    [[ -z "$word" ]] && continue
    word=${word//\\/\\\\}
    word=${word//\"/\\\"}
    top_json+="${top_json:+, }\"$word\": $count"
  done < <(printf '%s' "$text" | tr '[:upper:]' '[:lower:]' | tr -cs "[:alnum:]'" '\n' \
    | grep -v "^'*$" | sort | uniq -c | sort -k1,1nr -k2,2 | head -n "$top")
fi

printf '{"lines": %d, "words": %d, "chars": %d, "bytes": %d, "top_words": {%s}}\n' \
  "$lines" "$words" "$chars" "$bytes" "$top_json"
