#pragma once
// Logging goes through spdlog (header-only build). Apps configure the level from the config's
// [logging] section; the library only logs, it never decides where logs go.
#include <spdlog/spdlog.h>
