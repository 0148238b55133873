/* profiler/cuda/cupti_ops.c: the table of real CUPTI entry points. */
#define _GNU_SOURCE
#include <dlfcn.h>

#include "cupti_ops.h"

/* cuptiActivityEnableRuntimeApi / EnableDriverApi came with CUDA 12.5: looked up in the process
 * (libcupti is loaded by then), so a collector built with an older toolkit still loads */
typedef CUptiResult (*per_api_fn)(CUpti_CallbackId cbid, uint8_t enable);

static CUptiResult per_api(const char *symbol, CUpti_CallbackId cbid, uint8_t enable) {
    per_api_fn fn = NULL;
    *(void **)&fn = dlsym(RTLD_DEFAULT, symbol);
    return fn ? fn(cbid, enable) : CUPTI_ERROR_NOT_SUPPORTED;
}
static CUptiResult enable_runtime_api(CUpti_CallbackId cbid, uint8_t enable) {
    return per_api("cuptiActivityEnableRuntimeApi", cbid, enable);
}
static CUptiResult enable_driver_api(CUpti_CallbackId cbid, uint8_t enable) {
    return per_api("cuptiActivityEnableDriverApi", cbid, enable);
}

const struct sp_cupti_ops sp_cupti_real_ops = {
    .get_version = cuptiGetVersion,
    .get_timestamp = cuptiGetTimestamp,
    .get_result_string = cuptiGetResultString,
    .set_attribute = cuptiActivitySetAttribute,
    .register_callbacks = cuptiActivityRegisterCallbacks,
    .enable = cuptiActivityEnable,
    .get_next_record = cuptiActivityGetNextRecord,
    .get_num_dropped_records = cuptiActivityGetNumDroppedRecords,
    .flush_all = cuptiActivityFlushAll,
    .push_external_correlation = cuptiActivityPushExternalCorrelationId,
    .pop_external_correlation = cuptiActivityPopExternalCorrelationId,
    .get_callback_name = cuptiGetCallbackName,
    .disable = cuptiActivityDisable,
    .enable_runtime_api = enable_runtime_api,
    .enable_driver_api = enable_driver_api,
    .subscribe = cuptiSubscribe,
    .enable_domain = cuptiEnableDomain,
    .unsubscribe = cuptiUnsubscribe,
    .finalize = cuptiFinalize,
};
