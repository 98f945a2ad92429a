#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <systemd/sd-daemon.h>

#include "worker/daemon/notify.h"

uint64_t notify_watchdog_interval_ms(void)
{
        uint64_t usec = 0;
        /* > 0 only when WATCHDOG_USEC is set and WATCHDOG_PID (if any) is
         * this process. */
        if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0)
                return 0;
        uint64_t ms = usec / 2000;
        return ms ? ms : 1;
}

void notify_status(bool ready, const char *fmt, ...)
{
        static bool sent_ready;
        char status[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(status, sizeof(status), fmt, ap);
        va_end(ap);
        bool with_ready = ready && !sent_ready;
        /* The result is ignored on purpose: a service manager that cannot
         * be told is no reason to stop running jobs. */
        sd_notifyf(0, "%sSTATUS=%s", with_ready ? "READY=1\n" : "", status);
        sent_ready = sent_ready || with_ready;
}

void notify_stopping(const char *why)
{
        sd_notifyf(0, "STOPPING=1\nSTATUS=draining (%s)", why);
}

void notify_watchdog(void)
{
        sd_notify(0, "WATCHDOG=1");
}
