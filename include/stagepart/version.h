/* stagepart/version.h: compile-time version of the public API. */
#ifndef STAGEPART_VERSION_H
#define STAGEPART_VERSION_H

#define SP_VERSION_MAJOR 0
#define SP_VERSION_MINOR 1
#define SP_VERSION_PATCH 0

#endif
