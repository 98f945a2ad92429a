/* Inline SVG for the dashboard's charts and timelines.  The page's CSP
 * has no 'unsafe-inline' for styles, so every color and size is an SVG
 * presentation attribute (fill, x, width), never a style attribute; all
 * text (a queue's name, a tooltip) goes through ui_esc.  Numbers are
 * printed with one decimal in the C locale's format: coordinates of a
 * 1000-unit-wide viewBox need no more. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "worker/http/ui-internal.h"

double ui_svg_nice_max(double v)
{
        if (!isfinite(v) || v <= 0)
                return 1;
        /* The power of ten at or below v, without libm. */
        double p = 1;
        while (p * 10 <= v)
                p *= 10;
        while (p > v)
                p /= 10;
        /* Not 2.5: its half, a chart's middle line, would be 1.25. */
        static const double steps[] = { 1, 2, 4, 5, 10 };
        for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
                if (v <= steps[i] * p * (1 + 1e-9))
                        return steps[i] * p;
        return 10 * p;
}

double ui_svg_scale(double v, double max, double px)
{
        if (!isfinite(v) || v <= 0 || !isfinite(max) || max <= 0)
                return 0;
        if (v >= max)
                return px;
        return v / max * px;
}

void ui_svg_begin(struct dynbuf *b, const char *id, const char *cls, int w, int h,
                  const char *label)
{
        dynbuf_addstr(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"");
        ui_esc(b, id);
        dynbuf_printf(b,
                      "\" class=\"%s\" viewBox=\"0 0 %d %d\" width=\"100%%\" role=\"img\" "
                      "aria-label=\"",
                      cls, w, h);
        ui_esc(b, label);
        dynbuf_addstr(b, "\" font-family=\"system-ui, sans-serif\" font-size=\"12\">");
}

void ui_svg_end(struct dynbuf *b)
{
        dynbuf_addstr(b, "</svg>");
}

void ui_svg_rect(struct dynbuf *b, double x, double y, double w, double h, const char *fill,
                 const char *title)
{
        dynbuf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\">",
                      x, y, w, h, fill);
        if (title) {
                dynbuf_addstr(b, "<title>");
                ui_esc(b, title);
                dynbuf_addstr(b, "</title>");
        }
        dynbuf_addstr(b, "</rect>");
}

void ui_svg_text(struct dynbuf *b, double x, double y, const char *anchor, const char *fill,
                 const char *text)
{
        dynbuf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" fill=\"%s\">", x, y,
                      anchor, fill);
        ui_esc(b, text);
        dynbuf_addstr(b, "</text>");
}

void ui_svg_line(struct dynbuf *b, double x1, double y1, double x2, double y2, const char *stroke)
{
        dynbuf_printf(b,
                      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                      "stroke-width=\"1\"/>",
                      x1, y1, x2, y2, stroke);
}

void ui_svg_legend(struct dynbuf *b, double x, double y, const char *const *labels,
                   const char *const *fills, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                ui_svg_rect(b, x, y - 9, 10, 10, fills[i], NULL);
                ui_svg_text(b, x + 14, y, "start", "#1d232a", labels[i]);
                x += 24 + 7.0 * (double)strlen(labels[i]);
        }
}
