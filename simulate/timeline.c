/* simulate/timeline.c: what a simulation writes: the "stagepart-simulation" JSON document, the
 * Chrome trace (Perfetto, chrome://tracing) and the SVG timeline.
 *
 * The trace and the SVG are generated as text directly (a million ops would be a million cJSON
 * objects); names are our own ("F s3 mb12") and need no escaping, except the title, which is
 * escaped for XML and JSON. Times in the trace are microseconds relative to the iteration
 * start, never absolute clock values. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "json_util.h"
#include "sim_impl.h"

static const char *const assumptions[] = {
    "one op at a time per device, in the schedule's fixed order",
    "an op's time does not depend on what else runs (no contention, no SM sharing)",
    "op times do not depend on the number of micro-batches",
    "communication is either zero or a pure delay on the dependency edge (send_ms)",
};

sp_status sp_sim_to_json(sp_ctx *ctx, const sp_sim *sim, char **out) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!sim || !out)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_sim_to_json: NULL argument");
    *out = NULL;
    const sp_sim_summary *m = &sim->summary;
    cJSON *root = cJSON_CreateObject();
    bool ok = root && cJSON_AddStringToObject(root, "format", "stagepart-simulation") &&
              cJSON_AddNumberToObject(root, "version", 1) &&
              cJSON_AddStringToObject(root, "schedule", sp_schedule_name(m->schedule)) &&
              cJSON_AddNumberToObject(root, "devices", m->devices) &&
              cJSON_AddNumberToObject(root, "chunks", m->chunks) &&
              cJSON_AddNumberToObject(root, "micro_batches", m->micro_batches) &&
              cJSON_AddNumberToObject(root, "ops", (double)m->ops) &&
              cJSON_AddNumberToObject(root, "iteration_ms", m->iteration_ms) &&
              cJSON_AddNumberToObject(root, "bubble_fraction", m->bubble_fraction) &&
              cJSON_AddNumberToObject(root, "efficiency", m->efficiency) &&
              cJSON_AddNumberToObject(root, "ideal_ms", m->ideal_ms) &&
              cJSON_AddBoolToObject(root, "equal_stages", m->equal_stages) &&
              cJSON_AddBoolToObject(root, "given_order", m->given_order);
    if (ok)
        ok = m->equal_stages && isfinite(m->closed_form_ms)
                 ? cJSON_AddNumberToObject(root, "closed_form_ms", m->closed_form_ms) != NULL
                 : cJSON_AddNullToObject(root, "closed_form_ms") != NULL;
    cJSON *as = ok ? cJSON_AddArrayToObject(root, "assumptions") : NULL;
    ok = as != NULL;
    for (size_t i = 0; ok && i < sizeof assumptions / sizeof *assumptions; i++) {
        cJSON *str = cJSON_CreateString(assumptions[i]);
        ok = str && cJSON_AddItemToArray(as, str);
    }
    cJSON *stages = ok ? cJSON_AddArrayToObject(root, "stages") : NULL;
    ok = stages != NULL;
    for (uint32_t d = 0; ok && d < m->devices; d++) {
        const sp_sim_device *dv = &sim->devices[d];
        cJSON *o = cJSON_CreateObject();
        ok = o && cJSON_AddItemToArray(stages, o) && cJSON_AddNumberToObject(o, "device", d) &&
             cJSON_AddNumberToObject(o, "busy_ms", dv->busy_ms) &&
             cJSON_AddNumberToObject(o, "idle_ms", dv->idle_ms) &&
             cJSON_AddNumberToObject(o, "first_start_ms", dv->first_start_ms) &&
             cJSON_AddNumberToObject(o, "last_end_ms", dv->last_end_ms) &&
             cJSON_AddNumberToObject(o, "peak_inflight", dv->peak_inflight) &&
             cJSON_AddNumberToObject(o, "peak_memory_bytes", (double)dv->peak_memory_bytes);
    }
    sp_status st = ok ? sp_json_print(ctx, root, 0, "writing the simulation", out)
                      : sp_oom(ctx, "writing the simulation");
    cJSON_Delete(root);
    return st;
}

static sp_status finish(sp_ctx *ctx, struct sp_strbuf *sb, const char *path, const char *what) {
    if (sb->oom) {
        sp_strbuf_release(sb);
        return sp_oom(ctx, what);
    }
    sp_status st = sp_write_file_atomic(ctx, path, sb->buf, sb->len);
    sp_strbuf_release(sb);
    return st;
}

static void escape(struct sp_strbuf *sb, const char *s, bool xml) {
    for (; s && *s; s++) {
        char c = *s;
        if (xml && c == '<')
            sp_strbuf_puts(sb, "&lt;");
        else if (xml && c == '>')
            sp_strbuf_puts(sb, "&gt;");
        else if (xml && c == '&')
            sp_strbuf_puts(sb, "&amp;");
        else if (!xml && (c == '"' || c == '\\'))
            sp_strbuf_printf(sb, "\\%c", c);
        else if ((unsigned char)c < 32)
            sp_strbuf_puts(sb, " ");
        else
            sp_strbuf_append(sb, &c, 1);
    }
}

sp_status sp_sim_write_trace(sp_ctx *ctx, const sp_sim *sim, const char *path) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!sim || !path)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_sim_write_trace: NULL argument");
    if (!sim->n_ops && sim->summary.ops)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "the simulation kept no ops (keep_ops)");
    struct sp_strbuf sb;
    sp_strbuf_init(&sb);
    sp_strbuf_puts(&sb, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"title\":\"");
    escape(&sb, sim->title, false);
    sp_strbuf_puts(&sb, "\"},\"traceEvents\":[\n");
    sp_strbuf_puts(&sb, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"args\":{\"name\":\"");
    escape(&sb, sim->title, false);
    sp_strbuf_puts(&sb, "\"}}");
    for (uint32_t d = 0; d < sim->summary.devices; d++)
        sp_strbuf_printf(&sb,
                         ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":%u,"
                         "\"args\":{\"name\":\"device %u\"}}"
                         ",\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":0,\"tid\":%u,"
                         "\"args\":{\"sort_index\":%u}}",
                         d, d, d, d);
    for (size_t i = 0; i < sim->n_ops; i++) {
        const sp_sim_op *op = &sim->ops[i];
        if (op->kind == 'O') /* DualPipeV's overlapped pair: one op, both parts named */
            sp_strbuf_printf(&sb,
                             ",\n{\"name\":\"F s%u mb%u | B s%u mb%u\",\"cat\":\"O\",\"ph\":"
                             "\"X\",\"pid\":0,\"tid\":%u,\"ts\":%.3f,\"dur\":%.3f,\"args\":{"
                             "\"stage\":%u,\"micro_batch\":%u,\"backward_stage\":%u,"
                             "\"backward_micro_batch\":%u}}",
                             op->stage, op->micro_batch, op->stage2, op->micro_batch2, op->device,
                             op->start_ms * 1e3, (op->end_ms - op->start_ms) * 1e3, op->stage,
                             op->micro_batch, op->stage2, op->micro_batch2);
        else
            sp_strbuf_printf(&sb,
                             ",\n{\"name\":\"%c s%u mb%u\",\"cat\":\"%c\",\"ph\":\"X\","
                             "\"pid\":0,\"tid\":%u,\"ts\":%.3f,\"dur\":%.3f,\"args\":{"
                             "\"stage\":%u,\"micro_batch\":%u}}",
                             op->kind, op->stage, op->micro_batch, op->kind, op->device,
                             op->start_ms * 1e3, (op->end_ms - op->start_ms) * 1e3, op->stage,
                             op->micro_batch);
    }
    sp_strbuf_puts(&sb, "\n]}\n");
    return finish(ctx, &sb, path, "writing the trace");
}

/* colours: forward blue, full backward green, input-gradient part light green, weight
 * gradient orange, DualPipeV's overlapped forward + backward purple */
static const char *op_colour(char kind) {
    switch (kind) {
    case 'F':
        return "#4c72b0";
    case 'B':
        return "#55a868";
    case 'I':
        return "#8fd19e";
    case 'O':
        return "#8172b3";
    default:
        return "#dd8452";
    }
}

static double nice_step(double span) { /* 1, 2 or 5 x 10^k, about 8 ticks */
    double raw = span / 8, p = pow(10, floor(log10(raw)));
    double m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

sp_status sp_sim_write_svg(sp_ctx *ctx, const sp_sim *sim, const char *title, const char *path) {
    if (!ctx)
        return SP_ERR_INVALID_ARG;
    sp_ctx_begin(ctx);
    if (!sim || !path)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "sp_sim_write_svg: NULL argument");
    if (sim->n_ops > SP_SVG_MAX_OPS)
        return sp_fail(ctx, SP_ERR_LIMIT,
                       "an SVG timeline of %zu ops is more than the limit of %u; write a trace "
                       "with --trace and open it in Perfetto instead",
                       sim->n_ops, SP_SVG_MAX_OPS);
    if (!sim->n_ops && sim->summary.ops)
        return sp_fail(ctx, SP_ERR_INVALID_ARG, "the simulation kept no ops (keep_ops)");
    const sp_sim_summary *m = &sim->summary;
    const double left = 96, right = 24, top = 64, row = 30, gap = 6, width = 1200;
    double plot_w = width - left - right, span = m->iteration_ms > 0 ? m->iteration_ms : 1;
    double height = top + m->devices * (row + gap) + 70;
    double sx = plot_w / span;
    struct sp_strbuf sb;
    sp_strbuf_init(&sb);
    sp_strbuf_printf(&sb,
                     "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                     "viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans, Helvetica, Arial, "
                     "sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n",
                     width, height, width, height);
    sp_strbuf_puts(&sb, "<text x=\"16\" y=\"28\" font-size=\"17\" font-weight=\"bold\">");
    escape(&sb, title ? title : sim->title, true);
    sp_strbuf_puts(&sb, "</text>\n");
    sp_strbuf_printf(&sb,
                     "<text x=\"16\" y=\"48\" font-size=\"12\" fill=\"#555\">iteration %.3f ms, "
                     "bubble %.1f%%, %llu ops; idle time is grey</text>\n",
                     m->iteration_ms, 100 * m->bubble_fraction, (unsigned long long)m->ops);
    for (uint32_t d = 0; d < m->devices; d++) {
        double y = top + d * (row + gap);
        sp_strbuf_printf(&sb,
                         "<text x=\"%.0f\" y=\"%.1f\" font-size=\"13\" text-anchor=\"end\">"
                         "device %u</text>\n<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                         "height=\"%.1f\" fill=\"#f4f4f4\" stroke=\"#ddd\"/>\n",
                         left - 8, y + row / 2 + 4, d, left, y, plot_w, row);
    }
    for (size_t i = 0; i < sim->n_ops; i++) {
        const sp_sim_op *op = &sim->ops[i];
        double x = left + op->start_ms * sx, w = (op->end_ms - op->start_ms) * sx;
        double y = top + op->device * (row + gap);
        sp_strbuf_printf(&sb,
                         "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\" "
                         "stroke=\"#fff\" stroke-width=\"0.5\"><title>%c s%u mb%u %.3f-%.3f ms"
                         "</title></rect>\n",
                         x, y, w > 0.3 ? w : 0.3, row, op_colour(op->kind), op->kind, op->stage,
                         op->micro_batch, op->start_ms, op->end_ms);
        if (w >= 7.0 * (op->micro_batch >= 10 ? 2 : 1) + 3)
            sp_strbuf_printf(&sb,
                             "<text x=\"%.2f\" y=\"%.1f\" font-size=\"11\" fill=\"#fff\" "
                             "text-anchor=\"middle\">%u</text>\n",
                             x + w / 2, y + row / 2 + 4, op->micro_batch);
    }
    double axis_y = top + m->devices * (row + gap) + 4, step = nice_step(span);
    sp_strbuf_printf(&sb,
                     "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n",
                     left, axis_y, left + plot_w, axis_y);
    for (double t = 0; t <= span * 1.0001; t += step)
        sp_strbuf_printf(&sb,
                         "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>"
                         "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%g"
                         "</text>\n",
                         left + t * sx, axis_y, left + t * sx, axis_y + 5, left + t * sx,
                         axis_y + 18, t);
    sp_strbuf_printf(&sb,
                     "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">ms</text>\n",
                     left + plot_w, axis_y + 32);
    double ly = axis_y + 32;
    (void)m;
    const char *labels[5] = {"forward", "backward", "backward (input)", "backward (weights)",
                             "forward | backward"};
    const char kinds[5] = {'F', 'B', 'I', 'W', 'O'};
    bool present[5] = {false};
    for (size_t i = 0; i < sim->n_ops; i++)
        for (int k = 0; k < 5; k++)
            present[k] |= sim->ops[i].kind == kinds[k];
    for (int i = 0, shown = 0; i < 5; i++) {
        if (!present[i])
            continue;
        double lx = left + shown++ * 170;
        sp_strbuf_printf(&sb,
                         "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" fill=\"%s\"/>"
                         "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">%s</text>\n",
                         lx, ly - 11, op_colour(kinds[i]), lx + 20, ly, labels[i]);
    }
    sp_strbuf_puts(&sb, "</svg>\n");
    return finish(ctx, &sb, path, "writing the timeline");
}
