//go:build !linux

package quant

import "time"

// legacyThreadCPU is unavailable off Linux: 0, and the benchmarks report
// wall time only.
func legacyThreadCPU() time.Duration { return 0 }
