package main

import (
	"strings"
	"testing"
)

// TestRangeAndArgumentErrorsNameTheProblem: ledger verify's --size -1 (and one that is no integer) was kong's
// "expected a valid 64 bit uint but got "-1"" where --size 0 is said in the range wording; tokenize -1 was
// "unknown flag -1, did you mean one of "-h", "-p"?" where its FILE goes; and train --n-head 7 did not say which
// flags disagree. Each now names the flag or argument, the value and what it takes.
func TestRangeAndArgumentErrorsNameTheProblem(t *testing.T) {
	dir, head := writeLedger(t, 3)
	model := storiesPath(t)
	out := t.TempDir()
	const sizeNote = " (the entry count of the head given by --root: a published head has at least one entry)"
	for _, c := range []struct {
		name string
		args []string
		want string // standard error, whole
	}{
		{name: "a negative --size is out of the size's range, as --size 0 is",
			args: []string{"ledger", "verify", dir, "--root", head.Root, "--size", "-1"},
			want: `bankml: ledger verify: --size: value -1 out of range [1, inf)` + sizeNote},
		{name: "a negative --size given with = is out of the size's range",
			args: []string{"ledger", "verify", dir, "--size=-20"},
			want: `bankml: ledger verify: --size: value -20 out of range [1, inf)` + sizeNote},
		{name: "a negative --size past 64 bits is out of the size's range",
			args: []string{"ledger", "verify", dir, "--size", "-99999999999999999999999"},
			want: `bankml: ledger verify: --size: value -99999999999999999999999 out of range [1, inf)` + sizeNote},
		{name: "a --size past 64 bits is out of the range a count of entries takes",
			args: []string{"ledger", "verify", dir, "--size", "99999999999999999999999"},
			want: `bankml: ledger verify: --size: value 99999999999999999999999 out of range [1, 18446744073709551615]` + sizeNote},
		{name: "a --size that is no number is named as no integer",
			args: []string{"ledger", "verify", dir, "--root", head.Root, "--size", "abc"},
			want: `bankml: ledger verify: --size: value "abc" is not an integer (see bankml ledger verify --help)`},
		{name: "a --size with a fraction is named as no integer",
			args: []string{"ledger", "verify", dir, "--size", "1.5"},
			want: `bankml: ledger verify: --size: value "1.5" is not an integer (see bankml ledger verify --help)`},
		{name: "a negative number where tokenize's FILE goes is named as FILE",
			args: []string{"tokenize", "-1"},
			want: `bankml: tokenize: FILE: value -1 is read as a flag, and there is no flag -1 (a file named -1 is given as ./-1; see bankml tokenize --help)`},
		{name: "a negative number before tokenize's FILE is named as FILE",
			args: []string{"tokenize", "-25", model},
			want: `bankml: tokenize: FILE: value -25 is read as a flag, and there is no flag -25 (a file named -25 is given as ./-25; see bankml tokenize --help)`},
		{name: "a negative number after tokenize's FILE is an unexpected argument, as a word there is",
			args: []string{"tokenize", model, "-1"},
			want: `bankml: tokenize: unexpected argument -1 (see bankml tokenize --help)`},
		{name: "a negative number after ledger prove's index is an unexpected argument",
			args: []string{"ledger", "prove", dir, "1", "-7"},
			want: `bankml: ledger prove: unexpected argument -7 (see bankml ledger prove --help)`},
		{name: "an n_embd that is no multiple of the heads names both flags",
			args: []string{"train", "--out", out, "--n-head", "7"},
			want: `bankml: train: --n-embd 256 is not a multiple of --n-head 7: each head takes n_embd/n_head dimensions`},
		{name: "heads that are no multiple of the K/V heads name both flags",
			args: []string{"train", "--out", out, "--n-head", "8", "--n-head-kv", "3"},
			want: `bankml: train: --n-head 8 is not a multiple of --n-head-kv 3: each K/V head serves n_head/n_head_kv heads`},
		{name: "an odd head size names both flags and the size",
			args: []string{"train", "--out", out, "--n-head", "256", "--n-head-kv", "1"},
			want: `bankml: train: --n-embd 256 over --n-head 256 is a head size of 1, which is odd: rotary embedding turns the head's dimensions in pairs`},
		{name: "a ternary n_ff that is no whole number of blocks names the flag",
			args: []string{"train", "--out", out, "--n-ff", "100"},
			want: `bankml: train: --n-ff 100 is not a multiple of 256: a ternary model's matrices are whole TQ2_0 blocks of 256 weights (--mode float takes any size)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(c.args...)
			if code != 1 || stdout != "" || strings.TrimRight(stderr, "\n") != c.want {
				t.Fatalf("exit %d, stdout %q, stderr\n%s\nwant exit 1 and\n%s", code, stdout, stderr, c.want)
			}
		})
	}
}
