/* cli/cmd_check.c: `stagepart check`: the CI gate. Re-evaluates a committed plan on a freshly
 * measured profile and fails when its balance, its predicted iteration time or its staleness
 * (what a new plan would gain) passes a limit; optionally gates a run report too. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum {
    OPT_PLAN = 1,
    OPT_PROFILE,
    OPT_MAX_IMBALANCE,
    OPT_MAX_REGRESSION,
    OPT_MAX_STALE,
    OPT_REPORT,
    OPT_MAX_ERROR,
    OPT_JUNIT,
    OPT_JSON,
    OPT_DEVICES,
    OPT_LINKS,
};

const struct sp_opt cmd_check_opts[] = {
    {OPT_PLAN, "plan", 0, "<file>", "the committed plan", "Inputs"},
    {OPT_PROFILE, "profile", 0, "<file>", "a freshly measured profile of the same model", "Inputs"},
    {OPT_REPORT, "report", 0, "<file>", "a run report (stagepart run) to gate as well", "Inputs"},
    {OPT_DEVICES, "devices", 0, "<file>",
     "the stagepart-devices file the plan was made with (needed when the plan names devices and "
     "the profile has none)",
     "Inputs"},
    {OPT_LINKS, "links", 0, "<file>",
     "the stagepart-links file the plan was made with (needed when the plan has transfers)",
     "Inputs"},
    {OPT_MAX_IMBALANCE, "max-imbalance", 0, "<x>",
     "fail when bottleneck / mean stage time exceeds x (default: 1.10)", "Limits"},
    {OPT_MAX_REGRESSION, "max-regression", 0, "<r>",
     "fail when the predicted iteration time grew by more than r (default: 0.05 = 5%)", "Limits"},
    {OPT_MAX_STALE, "max-stale", 0, "<s>",
     "fail when a new plan would be more than s faster (default: 0.05 = 5%)", "Limits"},
    {OPT_MAX_ERROR, "max-prediction-error", 0, "<e>",
     "with --report: fail when measured and predicted iteration differ by more than e "
     "(default: 0.15)",
     "Limits"},
    {OPT_JUNIT, "junit", 0, "<file>", "also write JUnit XML (one test case per criterion)",
     "Output"},
    {OPT_JSON, "json", 0, NULL, "print the result as JSON", "Output"},
    {0, NULL, 0, NULL, NULL, NULL},
};

const struct sp_command_help cmd_check_help = {
    "check",
    "--plan PLAN --profile PROFILE [--max-imbalance X] [--max-regression R] [--max-stale S] "
    "[options]",
    "Gate a committed plan in CI against a freshly measured profile.",
    "Matches the plan's layers to the profile by name (a layer added, removed or renamed fails\n"
    "the check and is named), recomputes the stage times, imbalance and the simulated iteration\n"
    "time under the plan's schedule, compares them with the plan's recorded prediction, and\n"
    "partitions the new profile again to see what a new plan would gain. A plan made for\n"
    "devices or links is re-evaluated on the same ones (--devices, --links), each stage on\n"
    "the device the plan gave it. Prints one line per criterion; exit 1 when any fails. With\n"
    "GITHUB_ACTIONS=true failures are also printed as ::error annotations. docs/ci.md has\n"
    "complete GitHub Actions and GitLab CI jobs.",
    "  stagepart check --plan plan.json --profile new-profile.json\n"
    "  stagepart check --plan plan.json --profile p.json --max-imbalance 1.05 --junit check.xml\n"
    "  stagepart check --plan plan.json --profile p.json --devices devices.json --links "
    "links.json\n",
};

struct criterion {
    const char *name;
    bool passed, skipped;
    double value, limit;
    char message[512];
};

struct results {
    struct criterion c[8];
    int n;
};

static struct criterion *add(struct results *r, const char *name) {
    struct criterion *c = &r->c[r->n++];
    memset(c, 0, sizeof *c);
    c->name = name;
    return c;
}

__attribute__((format(printf, 2, 3))) static void say(struct criterion *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->message, sizeof c->message, fmt, ap);
    va_end(ap);
}

/* a small growable buffer (the CLI has no access to the library's internals) */
struct sp_strbuf_lite {
    char *buf;
    size_t len, cap;
    bool oom; /* an append failed: the text is incomplete and must not be written */
};

static void lite_puts(struct sp_strbuf_lite *b, const char *s) {
    size_t n = strlen(s);
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *nb = realloc(b->buf, cap);
        if (!nb) {
            b->oom = true;
            return;
        }
        b->buf = nb;
        b->cap = cap;
    }
    memcpy(b->buf + b->len, s, n + 1);
    b->len += n;
}

static void xml_escape(struct sp_strbuf_lite *b, const char *s) {
    for (; *s; s++) {
        char one[2] = {*s, 0};
        lite_puts(b, *s == '<'   ? "&lt;"
                     : *s == '>' ? "&gt;"
                     : *s == '&' ? "&amp;"
                     : *s == '"' ? "&quot;"
                                 : one);
    }
}

static sp_status write_junit(sp_ctx *ctx, const struct results *r, const char *path) {
    struct sp_strbuf_lite b = {NULL, 0, 0, false};
    int failures = 0, skipped = 0;
    for (int i = 0; i < r->n; i++) {
        failures += !r->c[i].passed && !r->c[i].skipped;
        skipped += r->c[i].skipped;
    }
    char head[256];
    snprintf(head, sizeof head,
             "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n<testsuite "
             "name=\"stagepart check\" tests=\"%d\" failures=\"%d\" skipped=\"%d\">\n",
             r->n, failures, skipped);
    lite_puts(&b, head);
    for (int i = 0; i < r->n; i++) {
        lite_puts(&b, "  <testcase classname=\"stagepart.check\" name=\"");
        xml_escape(&b, r->c[i].name);
        lite_puts(&b, "\">");
        if (r->c[i].skipped) {
            lite_puts(&b, "<skipped message=\"");
            xml_escape(&b, r->c[i].message);
            lite_puts(&b, "\"/>");
        } else if (!r->c[i].passed) {
            lite_puts(&b, "<failure message=\"");
            xml_escape(&b, r->c[i].message);
            lite_puts(&b, "\"/>");
        } else {
            lite_puts(&b, "<system-out>");
            xml_escape(&b, r->c[i].message);
            lite_puts(&b, "</system-out>");
        }
        lite_puts(&b, "</testcase>\n");
    }
    lite_puts(&b, "</testsuite>\n</testsuites>\n");
    sp_status st = b.buf && !b.oom ? sp_write_file_atomic(ctx, path, b.buf, b.len) : SP_ERR_NOMEM;
    free(b.buf);
    return st;
}

static bool parse_limit(const char *opt, const char *text, double min, double *out) {
    char *end = NULL;
    double v = strtod(text, &end);
    if (!end || *end || !(v >= min) || v > 1e6) {
        sp_usage_error("check", "--%s expects a number >= %g, got '%s'", opt, min, text);
        return false;
    }
    *out = v;
    return true;
}

static void evaluate(struct results *r, const sp_plan *committed, const sp_plan *now,
                     const sp_plan *fresh, const sp_run_report_summary *report, double max_imb,
                     double max_reg, double max_stale, double max_err) {
    const sp_plan_summary *c = sp_plan_get_summary(committed), *n = sp_plan_get_summary(now),
                          *f = sp_plan_get_summary(fresh);
    struct criterion *x = add(r, "imbalance");
    x->value = n->imbalance;
    x->limit = max_imb;
    x->passed = n->imbalance <= max_imb;
    say(x, "imbalance %.3f %s %.3f (bottleneck %.3f ms on %s %u, mean %.3f ms)", n->imbalance,
        x->passed ? "<=" : ">", max_imb, n->bottleneck_ms, n->chunks > 1 ? "device" : "stage",
        n->bottleneck_stage, n->mean_ms);
    x = add(r, "regression");
    if (!c->schedule.present) {
        x->skipped = true;
        say(x, "regression not checked: the plan records no simulated schedule");
    } else {
        double was = c->schedule.iteration_ms, is = n->schedule.iteration_ms;
        double change = was > 0 ? is / was - 1 : 0;
        x->value = change;
        x->limit = max_reg;
        x->passed = change <= max_reg;
        say(x, "predicted iteration %.3f ms, recorded %.3f ms: %+.1f%% %s %.1f%% (%s, M = %u)", is,
            was, 100 * change, x->passed ? "<=" : ">", 100 * max_reg,
            sp_schedule_name(n->schedule.schedule), n->schedule.micro_batches);
    }
    x = add(r, "staleness");
    double gain =
        f->schedule.iteration_ms > 0 ? n->schedule.iteration_ms / f->schedule.iteration_ms - 1 : 0;
    x->value = gain;
    x->limit = max_stale;
    x->passed = gain <= max_stale;
    say(x, "a new plan would be %.1f%% faster (%.3f ms against %.3f ms) %s %.1f%%%s", 100 * gain,
        f->schedule.iteration_ms, n->schedule.iteration_ms, x->passed ? "<=" : ">", 100 * max_stale,
        x->passed ? "" : ": run stagepart partition again and commit the plan");
    if (report) {
        x = add(r, "measured imbalance");
        x->value = report->measured_imbalance;
        x->limit = max_imb;
        x->passed = report->measured_imbalance <= max_imb;
        say(x, "measured imbalance %.3f %s %.3f", report->measured_imbalance,
            x->passed ? "<=" : ">", max_imb);
        x = add(r, "prediction error");
        double err = report->predicted_iteration_ms > 0
                         ? report->measured_iteration_ms / report->predicted_iteration_ms - 1
                         : 0;
        x->value = err;
        x->limit = max_err;
        x->passed = err <= max_err && err >= -max_err;
        say(x, "measured iteration %.3f ms, predicted %.3f ms: %+.1f%% (limit +-%.1f%%)",
            report->measured_iteration_ms, report->predicted_iteration_ms, 100 * err,
            100 * max_err);
    }
}

/* A plan made for devices or links is only comparable on the same ones: refuse (exit 2) when
 * they are missing or name other devices than the plan's at the plan's device indices. */
static int same_devices_and_links(const sp_plan *plan, const char *plan_path,
                                  const sp_devices *list, const sp_links *links) {
    size_t n = sp_plan_stage_count(plan);
    const sp_plan_summary *m = sp_plan_get_summary(plan);
    const sp_stage *named = NULL;
    bool transfers = m->transfer_ms > 0;
    for (size_t k = 0; k < n; k++) {
        const sp_stage *s = sp_plan_stage(plan, k);
        if (!named && s->device_name && *s->device_name)
            named = s;
        transfers |= s->comm_ms > 0;
    }
    if (named && !list)
        return sp_usage_error("check",
                              "%s was made for named devices (stage %u on '%s'); give check the "
                              "same --devices file so its stage times compare",
                              plan_path, named->index, named->device_name);
    for (uint32_t k = 0; named && k < m->stages; k++) {
        const sp_stage *s = sp_plan_stage(plan, k);
        const sp_device_info *d = sp_devices_get(list, s->device);
        if (!d || strcmp(d->name, s->device_name) != 0)
            return sp_usage_error("check",
                                  "%s has stage %u on device %u, '%s'; the devices given have "
                                  "%s%s%s there: give check the devices file the plan was made "
                                  "with",
                                  plan_path, k, s->device, s->device_name, d ? "'" : "",
                                  d ? d->name : "no such device", d ? "'" : "");
    }
    if (transfers && !links)
        return sp_usage_error("check",
                              "%s was made with links (%.3f ms of transfers); give check the "
                              "same --links file so its stage times compare",
                              plan_path, m->transfer_ms);
    return SP_EXIT_OK;
}

int cmd_check(int argc, char **argv) {
    const char *plan_path = NULL, *profile_path = NULL, *report_path = NULL, *junit = NULL;
    const char *devices_path = NULL, *links_path = NULL;
    double max_imb = 1.10, max_reg = 0.05, max_stale = 0.05, max_err = 0.15;
    bool json = false;
    struct sp_opt_parser p;
    sp_opt_parser_init(&p, "check", cmd_check_opts, argc, argv);
    for (int id; (id = sp_opt_next(&p)) != SP_OPT_DONE;) {
        switch (id) {
        case SP_OPT_ERROR:
            return SP_EXIT_USAGE;
        case SP_OPT_HELP:
            sp_print_command_help(stdout, &cmd_check_help, cmd_check_opts);
            return SP_EXIT_OK;
        case OPT_PLAN:
            plan_path = p.value;
            break;
        case OPT_PROFILE:
            profile_path = p.value;
            break;
        case OPT_REPORT:
            report_path = p.value;
            break;
        case OPT_JUNIT:
            junit = p.value;
            break;
        case OPT_DEVICES:
            devices_path = p.value;
            break;
        case OPT_LINKS:
            links_path = p.value;
            break;
        case OPT_JSON:
            json = true;
            break;
        case OPT_MAX_IMBALANCE:
            if (!parse_limit("max-imbalance", p.value, 1.0, &max_imb))
                return SP_EXIT_USAGE;
            break;
        case OPT_MAX_REGRESSION:
            if (!parse_limit("max-regression", p.value, 0.0, &max_reg))
                return SP_EXIT_USAGE;
            break;
        case OPT_MAX_STALE:
            if (!parse_limit("max-stale", p.value, 0.0, &max_stale))
                return SP_EXIT_USAGE;
            break;
        case OPT_MAX_ERROR:
            if (!parse_limit("max-prediction-error", p.value, 0.0, &max_err))
                return SP_EXIT_USAGE;
            break;
        }
    }
    if (p.n_positional)
        return sp_usage_error("check", "unexpected argument '%s'", p.positional[0]);
    if (!plan_path || !profile_path)
        return sp_usage_error("check", "missing %s", plan_path ? "--profile" : "--plan");
    const char *inputs[] = {plan_path, profile_path, report_path, devices_path, links_path};
    int clash = sp_check_output_not_input("check", "--junit", junit, inputs, 5);
    if (clash)
        return clash;
    sp_ctx *ctx = NULL;
    if (sp_ctx_create(&ctx) != SP_OK)
        return SP_EXIT_INTERNAL;
    sp_plan *committed = NULL, *now = NULL, *fresh = NULL;
    sp_profile *profile = NULL;
    sp_devices *devices = NULL;
    sp_links *links = NULL;
    size_t *first = NULL;
    struct results r = {.n = 0};
    sp_run_report_summary report;
    int code = SP_EXIT_OK;
    sp_status st;
    if ((st = sp_plan_load(ctx, plan_path, &committed)) != SP_OK ||
        (st = sp_profile_load(ctx, profile_path, &profile)) != SP_OK ||
        (report_path && (st = sp_run_report_load(ctx, report_path, &report)) != SP_OK) ||
        (devices_path && (st = sp_devices_load(ctx, devices_path, &devices)) != SP_OK) ||
        (links_path && (st = sp_links_load(ctx, links_path, &links)) != SP_OK)) {
        code = sp_report(ctx, st, json);
        goto out;
    }
    code = same_devices_and_links(committed, plan_path,
                                  devices ? devices : sp_profile_devices(profile), links);
    if (code != SP_EXIT_OK)
        goto out;
    first = calloc(sp_plan_stage_count(committed), sizeof *first);
    if (!first) {
        code = SP_EXIT_INTERNAL;
        goto out;
    }
    struct criterion *layers = add(&r, "layers match");
    st = sp_plan_remap(ctx, committed, profile, first);
    if (st == SP_ERR_SCHEMA) {
        layers->passed = false;
        snprintf(layers->message, sizeof layers->message, "%s", sp_ctx_errmsg(ctx));
    } else if (st != SP_OK) {
        code = sp_report(ctx, st, json);
        goto out;
    } else {
        layers->passed = true;
        say(layers, "the profile's %zu layers match the plan's by name",
            sp_profile_layer_count(profile));
        sp_partition_opts opts;
        sp_plan_options(committed, &opts);
        opts.devices = devices;
        opts.links = links;
        if ((st = sp_plan_from_split(ctx, profile, &opts, first, sp_plan_stage_count(committed),
                                     &now)) != SP_OK ||
            (st = sp_partition(ctx, profile, &opts, &fresh)) != SP_OK) {
            code = sp_report(ctx, st, json);
            goto out;
        }
        evaluate(&r, committed, now, fresh, report_path ? &report : NULL, max_imb, max_reg,
                 max_stale, max_err);
    }
    int failed = 0;
    for (int i = 0; i < r.n; i++)
        failed += !r.c[i].passed && !r.c[i].skipped;
    bool github = getenv("GITHUB_ACTIONS") && strcmp(getenv("GITHUB_ACTIONS"), "true") == 0;
    if (json) {
        printf("{\n\t\"format\":\t\"stagepart-check\",\n\t\"version\":\t1,\n\t\"passed\":\t%s,\n"
               "\t\"criteria\":\t[",
               failed ? "false" : "true");
        for (int i = 0; i < r.n; i++) {
            printf("%s\n\t\t{\"name\": \"%s\", \"passed\": %s, \"skipped\": %s, \"value\": %.17g, "
                   "\"limit\": %.17g, \"message\": \"",
                   i ? "," : "", r.c[i].name, r.c[i].passed ? "true" : "false",
                   r.c[i].skipped ? "true" : "false", r.c[i].value, r.c[i].limit);
            for (const char *c = r.c[i].message; *c; c++) {
                if (*c == '"' || *c == '\\')
                    putchar('\\');
                putchar(*c == '\n' ? ' ' : *c);
            }
            printf("\"}");
        }
        printf("\n\t]\n}\n");
    } else {
        for (int i = 0; i < r.n; i++) {
            const char *tag = r.c[i].skipped ? "SKIP" : r.c[i].passed ? "PASS" : "FAIL";
            const char *line = r.c[i].message;
            printf("%s  %-18s %s\n", tag, r.c[i].name, line);
        }
        printf("stagepart check: %d passed, %d failed\n", r.n - failed, failed);
    }
    if (github)
        for (int i = 0; i < r.n; i++)
            if (!r.c[i].passed && !r.c[i].skipped) {
                printf("::error title=stagepart check: %s::", r.c[i].name);
                for (const char *c = r.c[i].message; *c; c++) /* annotations are one line */
                    fputs(*c == '\n' ? "%0A" : *c == '%' ? "%25" : (char[]){*c, 0}, stdout);
                putchar('\n');
            }
    if (junit && (st = write_junit(ctx, &r, junit)) != SP_OK) {
        code = sp_report(ctx, st, false);
        goto out;
    }
    code = failed ? SP_EXIT_CHECK_FAILED : SP_EXIT_OK;
out:
    free(first);
    sp_plan_destroy(committed);
    sp_plan_destroy(now);
    sp_plan_destroy(fresh);
    sp_profile_destroy(profile);
    sp_devices_destroy(devices);
    sp_links_destroy(links);
    sp_ctx_destroy(ctx);
    return code;
}
