//go:build !unix

package engine

import "time"

// processCPU is not measured off Unix: 0.
func processCPU() time.Duration { return 0 }
