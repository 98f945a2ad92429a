/* The systemd service manager protocol (sd_notify(3)) for Type=notify:
 * READY=1 once the worker is connected and claiming, STOPPING=1 when it
 * drains, WATCHDOG=1 from the main loop, STATUS= lines.  Without
 * $NOTIFY_SOCKET (not under systemd) every call does nothing. */
#ifndef BC_WORKER_DAEMON_NOTIFY_H
#define BC_WORKER_DAEMON_NOTIFY_H

#include <stdbool.h>
#include <stdint.h>

/* The watchdog ping interval in ms (half of $WATCHDOG_USEC, as
 * sd_watchdog_enabled(3) advises), or 0 when no watchdog is asked for. */
uint64_t notify_watchdog_interval_ms(void);

/* STATUS=<text>, with READY=1 the first time ready is true. */
void notify_status(bool ready, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void notify_stopping(const char *why);
void notify_watchdog(void);

#endif
