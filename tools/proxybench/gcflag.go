package main

import (
	"flag"

	"github.com/metaclaw-go/metaclaw/host/config"
)

// gcPercent is runtime.gc_percent of the loaded run, the config's default
// unless given: loaded() applies it as the daemon does at start, so GOGC or
// GOMEMLIMIT in the environment wins (the GC table prints what the run had).
var gcPercent = flag.Int("gc-percent", config.Default("").Runtime.GCPercent,
	"runtime.gc_percent of the loaded metaclaw run (GOGC of the process); as in the daemon, GOGC or GOMEMLIMIT in the environment wins")
