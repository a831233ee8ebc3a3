# Functions shared by the scripts (sourced, never run alone).
say_hello() { echo "hello, $1"; }
