package quant

import (
	"fmt"
	"os"
	"strings"
)

// Level is a set of CPU instructions the kernels may use. Every level
// computes the same bits (the reference's haswell chains); the levels differ
// only in speed. The kernels of a level are chosen at run time from what the
// CPU reports (golang.org/x/sys/cpu), or forced with BANKML_CPU.
//
//   - LevelGeneric: portable Go (the twins of the assembly kernels), on every
//     platform.
//   - LevelAVX2: amd64 with AVX2, FMA and F16C (what ggml's haswell variant
//     needs).
//   - LevelAVX512: LevelAVX2 plus AVX-512 F, BW, VL and VNNI (vpdpbusd).
type Level uint8

const (
	LevelGeneric Level = iota
	LevelAVX2
	LevelAVX512
)

// EnvCPU is the environment variable that forces a Level: generic, avx2 or
// avx512 (empty or unset: the best level the CPU has).
const EnvCPU = "BANKML_CPU"

var levelNames = [...]string{LevelGeneric: "generic", LevelAVX2: "avx2", LevelAVX512: "avx512"}

// String is the level's name as BANKML_CPU spells it.
func (l Level) String() string {
	if int(l) < len(levelNames) {
		return levelNames[l]
	}
	return fmt.Sprintf("Level(%d)", uint8(l))
}

// ParseLevel reads a level name (generic, avx2, avx512; case-insensitive).
// It does not check that the CPU has the level (see Level.Check).
func ParseLevel(s string) (Level, error) {
	for l, name := range levelNames {
		if strings.EqualFold(strings.TrimSpace(s), name) {
			return Level(l), nil
		}
	}
	return 0, fmt.Errorf("quant: unknown CPU level %q (want generic, avx2 or avx512)", s)
}

// Check reports whether this CPU (and OS) can run the level's kernels, with
// an error naming the instructions it lacks otherwise.
func (l Level) Check() error {
	if int(l) >= len(levelNames) {
		return fmt.Errorf("quant: unknown CPU level %d", uint8(l))
	}
	if missing := missingFeatures(l); len(missing) > 0 {
		return fmt.Errorf("quant: CPU level %s needs %s, which this CPU lacks", l, strings.Join(missing, ", "))
	}
	return nil
}

// Detect returns the best level this CPU has.
func Detect() Level {
	for l := LevelAVX512; l > LevelGeneric; l-- {
		if l.Check() == nil {
			return l
		}
	}
	return LevelGeneric
}

// Levels returns every level this CPU can run, generic first (the oracle
// tests run at each).
func Levels() []Level {
	var ls []Level
	for l := range Level(len(levelNames)) {
		if l.Check() == nil {
			ls = append(ls, l)
		}
	}
	return ls
}

// LevelFromEnv returns the level BANKML_CPU forces, or Detect() when it is
// unset or empty. A name it does not know, or a level the CPU lacks, is an
// error (never a silent fallback).
func LevelFromEnv() (Level, error) {
	s, ok := os.LookupEnv(EnvCPU)
	if !ok || strings.TrimSpace(s) == "" {
		return Detect(), nil
	}
	l, err := ParseLevel(s)
	if err != nil {
		return 0, fmt.Errorf("%s=%s: %w", EnvCPU, s, err)
	}
	if err := l.Check(); err != nil {
		return 0, fmt.Errorf("%s=%s: %w", EnvCPU, s, err)
	}
	return l, nil
}
