/* profiler/cuda/cupti_ops.c: the table of real CUPTI entry points. */
#include "cupti_ops.h"

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
};
