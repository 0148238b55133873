/* tests/links_fixture.h: a links document made in memory for the C tests: n devices in nodes of
 * per_node, in_GBps inside a node and out_GBps between, lat_us everywhere. */
#ifndef SP_TESTS_LINKS_FIXTURE_H
#define SP_TESTS_LINKS_FIXTURE_H

#include <stdio.h>
#include <string.h>

#include "stagepart/stagepart.h"
#include "test.h"

static inline sp_links *test_links(sp_ctx *ctx, int n, int per_node, double in_GBps,
                                   double out_GBps, double lat_us) {
    char buf[65536];
    size_t len = (size_t)snprintf(buf, sizeof buf,
                                  "{\"format\":\"stagepart-links\",\"version\":1,\"devices\":[");
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s\"g%d\"", i ? "," : "", i);
    for (int m = 0; m < 2; m++) {
        len += (size_t)snprintf(buf + len, sizeof buf - len, "],\"%s\":[",
                                m ? "latency_us" : "bandwidth_GBps");
        for (int i = 0; i < n; i++) {
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%s[", i ? "," : "");
            for (int j = 0; j < n; j++) {
                double v = i == j                         ? 0
                           : m                            ? lat_us
                           : i / per_node == j / per_node ? in_GBps
                                                          : out_GBps;
                len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%g", j ? "," : "", v);
            }
            len += (size_t)snprintf(buf + len, sizeof buf - len, "]");
        }
    }
    len += (size_t)snprintf(buf + len, sizeof buf - len, "]}");
    sp_links *l = NULL;
    SP_CHECK_STATUS(sp_links_parse(ctx, "links.json", buf, len, &l), SP_OK);
    return l;
}

#endif
