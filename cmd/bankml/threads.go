package main

import (
	"fmt"
	"runtime"
	"strconv"

	"github.com/alecthomas/kong"
)

// maxThreads is ggml's GGML_MAX_N_THREADS (ggml/include/ggml.h:225), the most threads a ggml threadpool takes.
const maxThreads = 512

// threadCount is the value of -t/--threads (run, serve, perplexity, quantize), read as llama.cpp's
// common/arg.cpp reads -t (its handler at :1514–1521): a count of 0 or less takes the number of logical CPUs
// (llama.cpp's std::thread::hardware_concurrency; Go's runtime.NumCPU). Deliberate difference: a count above
// GGML_MAX_N_THREADS (512) is a usage error at parse time (exit 1) naming -t, where llama.cpp takes it and
// bankml would otherwise run out of memory starting the workers; a value that is not an integer is refused too.
type threadCount int

// Decode implements kong.MapperValue.
func (n *threadCount) Decode(ctx *kong.DecodeContext) error {
	t, err := ctx.Scan.PopValue("threads")
	if err != nil {
		return err
	}
	var v int
	switch x := t.Value.(type) {
	case string:
		if v, err = strconv.Atoi(x); err != nil {
			return fmt.Errorf("-t/--threads: value %q is not an integer", x)
		}
	case int:
		v = x
	default:
		return fmt.Errorf("-t/--threads: expected an integer, got %v", t.Value)
	}
	if v > maxThreads {
		return outOfRange("-t/--threads", v, 1, maxThreads, fmt.Sprintf("0 or less: the number of logical CPUs; %d is ggml's GGML_MAX_N_THREADS", maxThreads))
	}
	if v <= 0 {
		v = runtime.NumCPU()
	}
	*n = threadCount(v)
	return nil
}
