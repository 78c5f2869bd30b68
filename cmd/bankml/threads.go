package main

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"

	"github.com/alecthomas/kong"
)

// maxThreads is ggml's GGML_MAX_N_THREADS (ggml/include/ggml.h:225), the most threads a ggml threadpool takes.
const maxThreads = 512

// threadCount is the value of -t/--threads (run, serve, perplexity, quantize), read as llama.cpp's
// common/arg.cpp reads -t (its handler at :1514–1521): a 32-bit int (std::stoi refuses one past it), a count of
// 0 or less taking the number of logical CPUs (llama.cpp's std::thread::hardware_concurrency; Go's
// runtime.NumCPU). Deliberate difference: a count above GGML_MAX_N_THREADS (512) is a usage error at parse time
// (exit 1) naming -t, where llama.cpp takes it and bankml would otherwise run out of memory starting the
// workers; a value that is not an integer is refused too. Out of range is one error for both ends, quoting the
// whole range -t takes, [-2^31, 512].
type threadCount int

// Decode implements kong.MapperValue.
func (n *threadCount) Decode(ctx *kong.DecodeContext) error {
	t, err := ctx.Scan.PopValue("threads")
	if err != nil {
		return err
	}
	var v int64
	var shown any // the value as given, for the error
	switch x := t.Value.(type) {
	case string:
		shown = x
		if v, err = strconv.ParseInt(x, 10, 64); errors.Is(err, strconv.ErrRange) {
			return threadsRange(x)
		} else if err != nil {
			return fmt.Errorf("-t/--threads: value %q is not an integer", x)
		}
	case int:
		v, shown = int64(x), x
	default:
		return fmt.Errorf("-t/--threads: expected an integer, got %v", t.Value)
	}
	if v < math.MinInt32 || v > maxThreads {
		return threadsRange(shown)
	}
	if v <= 0 {
		v = int64(runtime.NumCPU())
	}
	*n = threadCount(v)
	return nil
}

// threadsRange is -t's out-of-range error for the value v as given.
func threadsRange(v any) error {
	return outOfRange("-t/--threads", v, math.MinInt32, maxThreads,
		fmt.Sprintf("0 or less: the number of logical CPUs; %d is ggml's GGML_MAX_N_THREADS", maxThreads))
}
