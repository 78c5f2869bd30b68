package main

import (
	"fmt"
	"math"

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
	msg := fmt.Sprintf("%s: value %v out of range %s", flag, v, r)
	if note != "" {
		msg += " (" + note + ")"
	}
	return &rangeError{msg: msg}
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

// rangeError is outOfRange's error; err, when not nil, is a sentinel it wraps (errInt32).
type rangeError struct {
	msg string
	err error
}

func (e *rangeError) Error() string { return e.msg }
func (e *rangeError) Unwrap() error { return e.err }
