# A guest kernel's report (a soft lockup, an oops, a panic with every
# CPU's backtrace) cut to what says what went wrong and where: the
# headings, each CPU's task and RIP, and the first frames of each call
# trace that the unwinder is sure of (not the "? " guesses).  Read by
# tests/vm/run.sh from the report's first line on.
{ sub(/^\[ *[0-9.]+\] /, "") }
/BUG: |Kernel panic|rcu: INFO|NMI backtrace|soft lockup|blocked for more than|Oops|general protection/ { print; next }
/^CPU: [0-9]+ PID: / { print; next }
/^RIP: 0010:/ { print; next }
/^Call Trace:/ { frames = 8; next }
frames > 0 && /^ *<\/?(TASK|IRQ|NMI)>/ { print "  " $1; next }
frames > 0 && /^ +[A-Za-z_][A-Za-z_0-9.]*\+0x/ { print "  " $1; if (--frames == 0) print "  ..."; next }
