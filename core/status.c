/* core/status.c: version, features and the status table (generated from SP_STATUS_MAP). */
#include <math.h>
#include <time.h>

#include "build_info.h"
#include "internal.h"

const char *sp_version(void) {
    return SP_BUILD_VERSION;
}
const char *sp_git_hash(void) {
    return SP_BUILD_GIT_HASH;
}
const char *sp_features(void) {
    return SP_BUILD_FEATURES;
}

const char *sp_status_name(sp_status status) {
    switch (status) {
#define SP_STATUS_NAME_(name, msg)                                                                 \
    case name:                                                                                     \
        return #name;
        SP_STATUS_MAP(SP_STATUS_NAME_)
#undef SP_STATUS_NAME_
    default:
        return "SP_ERR_UNKNOWN";
    }
}

const char *sp_strerror(sp_status status) {
    switch (status) {
#define SP_STATUS_MSG_(name, msg)                                                                  \
    case name:                                                                                     \
        return msg;
        SP_STATUS_MAP(SP_STATUS_MSG_)
#undef SP_STATUS_MSG_
    default:
        return "unknown status";
    }
}

double sp_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int64_t sp_round_ticks_far(double x) {
    return (int64_t)llround(x);
}

double sp_ticks_to_ms(int64_t ticks) {
    return (double)ticks / SP_TICKS_PER_MS;
}

int64_t sp_speed_scale(int64_t ticks, double speed) {
    return speed == 1.0 ? ticks : (int64_t)llround((double)ticks / speed);
}
