package main

import (
	"fmt"
	"math"
	"strconv"

	"github.com/bankml/bankml/model"
)

// inf is outOfRange's hi for a range with no upper bound: "[lo, inf)".
const inf = math.MaxInt64

// outOfRange is the one wording, on every command, of a flag value outside the range the flag takes:
// "FLAG: value V out of range [LO, HI]" ("[LO, inf)" when hi is inf), then, when note is not "", what the
// range's ends or the values outside it that the flag also takes mean, in parentheses. FLAG is spelled as the
// flag's help names it (-t/--threads). Callers prefix the command ("run: ").
func outOfRange(flag string, v any, lo, hi int64, note string) error {
	r := fmt.Sprintf("[%d, %d]", lo, hi)
	if hi == inf {
		r = fmt.Sprintf("[%d, inf)", lo)
	}
	return rangeMessage(flag, v, r, note)
}

// rangeMessage is outOfRange's error with the range r already written.
func rangeMessage(flag string, v any, r, note string) error {
	msg := fmt.Sprintf("%s: value %v out of range %s", flag, v, r)
	if note != "" {
		msg += " (" + note + ")"
	}
	return &rangeError{msg: msg}
}

// floatRange is one float flag's value and the range it takes, for checkFloatRanges: [lo, hi], lo itself
// excluded when openLo ("(0, inf)"); hi +Inf is no upper bound ("inf)"). A value must be a finite number.
type floatRange struct {
	flag   string
	v      float64
	lo, hi float64
	openLo bool
	note   string
}

// checkFloatRanges is checkRanges for float flags: outOfRange's words for the first flag whose value is
// outside its range (NaN and ±Inf are outside every range), nil when every one is inside. Values and ends are
// written in the fewest digits that read back as the flag's value (0.002, -0.1 for a float32 flag's -0.1,
// +Inf, NaN).
func checkFloatRanges(flags ...floatRange) error {
	for _, f := range flags {
		if f.v >= f.lo && f.v <= f.hi && !math.IsInf(f.v, 0) && !(f.openLo && f.v == f.lo) {
			continue
		}
		open, end := "[", shortFloat(f.hi)+"]"
		if f.openLo {
			open = "("
		}
		if math.IsInf(f.hi, 1) {
			end = "inf)"
		}
		return rangeMessage(f.flag, shortFloat(f.v), open+shortFloat(f.lo)+", "+end, f.note)
	}
	return nil
}

// shortFloat writes v in the fewest digits that read back as v, as a float32 when v is one (a float32 flag's
// value widened), else as a float64.
func shortFloat(v float64) string {
	if float64(float32(v)) == v {
		return strconv.FormatFloat(v, 'g', -1, 32)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// intRange is one int flag's value and the range it takes, for checkRanges.
type intRange struct {
	flag   string
	v      int
	lo, hi int64
	note   string
}

// checkRanges returns outOfRange's error for the first flag whose value is outside its range, nil when
// every one is inside.
func checkRanges(flags ...intRange) error {
	for _, f := range flags {
		if int64(f.v) < f.lo || int64(f.v) > f.hi {
			return outOfRange(f.flag, f.v, f.lo, f.hi, f.note)
		}
	}
	return nil
}

// checkCtxSize refuses a -c/--ctx-size outside [0, 2^30] (model.CheckContextSize's bound, which needs no
// model; 0 is the training context) in outOfRange's words.
func checkCtxSize(nCtx int) error {
	if model.CheckContextSize(nCtx) != nil {
		return outOfRange("-c/--ctx-size", nCtx, 0, model.MaxContextSize, "0: the model's training context")
	}
	return nil
}

// checkNPredict refuses a run's -n/--n-predict outside [-2, 2^31-1] in outOfRange's words: below -2 (llama.cpp
// defines -1 and -2 only) and past a 32-bit int (arg.cpp's std::stoi, arg.cpp:1655) quote the one range -n takes,
// as checkCtxSize does for -c.
func checkNPredict(n int) error {
	if n < -2 || n > math.MaxInt32 {
		return outOfRange("-n/--n-predict", n, -2, math.MaxInt32, "-1: to an end-of-generation token, -2: until the context is full")
	}
	return nil
}

// rangeError is outOfRange's error; err, when not nil, is a sentinel it wraps (errInt32).
type rangeError struct {
	msg string
	err error
}

func (e *rangeError) Error() string { return e.msg }
func (e *rangeError) Unwrap() error { return e.err }
