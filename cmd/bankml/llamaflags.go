package main

// llama.cpp command-line compatibility of `bankml run` and `bankml serve`: what a llama-cli / llama-server
// user types, following common/arg.cpp at the reference's commit.
//
//   - -m/--model FNAME names the model, as the positional MODEL does (resolveModel).
//   - llama.cpp's multi-letter single-dash flags (-np, -ngl, -fa, -cb, -nocb, -to, -lm), which kong would read
//     as clusters of one-letter flags (-ngl as -n -g -l), are rewritten to their long spellings before kong
//     parses (llamaArgs).
//   - Flags that mean nothing for a CPU-only bankml are accepted, their values checked as llama.cpp checks
//     them, and each prints one warning line to stderr naming it and why it is ignored (llamaIgnored).

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"
)

// llamaShort maps llama.cpp's multi-letter single-dash spellings to the long flag kong knows, per command.
// Only spellings of flags the command has are listed (-np and -to are llama-server's only).
var llamaShort = map[string]map[string]string{
	"run": {
		"-ngl": "--n-gpu-layers", "-fa": "--flash-attn", "-cb": "--cont-batching", "-nocb": "--no-cont-batching",
		"-lm": "--load-mode",
	},
	"serve": {
		"-np": "--parallel", "-ngl": "--n-gpu-layers", "-fa": "--flash-attn", "-cb": "--cont-batching",
		"-nocb": "--no-cont-batching", "-lm": "--load-mode", "-to": "--timeout",
	},
}

// llamaArgs rewrites llama.cpp's multi-letter single-dash flags (llamaShort; "-ngl 99" and "-ngl=99") to
// their long spellings in the arguments of `bankml run` and `bankml serve`, and, for every command, splits
// a one-letter flag that takes a value written with "=" (-p=Once, -n=4) into the flag and its value, which
// kong would otherwise read as the value "=Once" (llama.cpp has no "=" form for single-dash flags; it
// refuses them, bankml takes them as meant). takesValue reports whether a token is a flag that takes a
// value: the token after it is that value (-p -ngl prompts the text "-ngl"; -p -n=4 the text "-n=4") and is
// left alone.
func llamaArgs(args []string, takesValue func(string) bool) []string {
	if len(args) == 0 {
		return args
	}
	short := llamaShort[args[0]] // nil for the other commands
	out := make([]string, 0, len(args)+2)
	out = append(out, args[0])
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		if i > 1 && takesValue(args[i-1]) {
			out = append(out, a)
			continue
		}
		name, value, eq := strings.Cut(a, "=")
		if long, ok := short[name]; ok {
			if eq {
				out = append(out, long+"="+value)
			} else {
				out = append(out, long)
			}
			continue
		}
		if eq && len(name) == 2 && name[0] == '-' && name[1] != '-' && takesValue(name) {
			// kong would read -p=x as -p with the value "=x".
			out = append(out, name, value)
			continue
		}
		out = append(out, a)
	}
	return out
}

// valueFlags returns takesValue for llamaArgs from the parser's model: the spellings (--name, aliases, -s)
// of the flags of command cmd and of the application that take a value (not booleans or counters).
func valueFlags(app *kong.Application, cmd string) func(string) bool {
	set := map[string]bool{}
	add := func(flags []*kong.Flag) {
		for _, f := range flags {
			if f.IsBool() || f.IsCounter() {
				continue
			}
			set["--"+f.Name] = true
			for _, a := range f.Aliases {
				set["--"+a] = true
			}
			if f.Short != 0 {
				set["-"+string(f.Short)] = true
			}
		}
	}
	add(app.Flags)
	for _, c := range app.Children {
		if c.Name == cmd {
			add(c.Flags)
		}
	}
	for s, long := range llamaShort[cmd] {
		if set[long] {
			set[s] = true
		}
	}
	return func(tok string) bool { return set[tok] }
}

// resolveModel is the model's path from a command's positional MODEL and llama.cpp's -m/--model FNAME
// (kong has made both absolute): one of them, or both when they name the same path. Neither, or two
// different paths, is a usage error naming them.
func resolveModel(positional, flag string) (string, error) {
	switch {
	case positional == "" && flag == "":
		return "", errors.New(`expected "<MODEL>" or -m/--model FNAME: the GGUF file to load`)
	case positional != "" && flag != "" && positional != flag:
		return "", fmt.Errorf("the model is given twice, as MODEL %q and as -m/--model %q: give one", positional, flag)
	case positional != "":
		return positional, nil
	}
	return flag, nil
}

// llamaIgnored holds llama.cpp's flags that have no meaning for bankml, which runs on the CPU only, from
// its own memory-mapped file, with llama.cpp's default attention (flash attention, which the reference's
// "auto" picks on the CPU) and a decode of its own per slot. Each given flag prints one warning line
// (warn); values are checked as common/arg.cpp checks them.
type llamaIgnored struct {
	GPULayers    *string `name:"n-gpu-layers" aliases:"gpu-layers" placeholder:"N" group:"llama.cpp (ignored)" help:"llama.cpp's -ngl/--gpu-layers/--n-gpu-layers (a number, auto or all): ignored with a warning, bankml runs on the CPU only."`
	FlashAttn    *string `name:"flash-attn" placeholder:"on|off|auto" group:"llama.cpp (ignored)" help:"llama.cpp's -fa/--flash-attn: ignored with a warning; bankml always runs flash attention, as the reference's default auto does on the CPU (with off llama.cpp's other attention path may differ in the last bits)."`
	ContBatching bool    `name:"cont-batching" group:"llama.cpp (ignored)" help:"llama-server's -cb/--cont-batching: ignored with a warning; each bankml slot decodes on its own."`
	NoContBatch  bool    `name:"no-cont-batching" group:"llama.cpp (ignored)" help:"llama-server's -nocb/--no-cont-batching: ignored with a warning; each bankml slot decodes on its own."`
	LoadMode     *string `name:"load-mode" placeholder:"MODE" group:"llama.cpp (ignored)" help:"llama.cpp's -lm/--load-mode (auto, none, mmap, mlock, mmap+mlock, dio): ignored with a warning; bankml memory-maps the file."`
	Mlock        bool    `name:"mlock" group:"llama.cpp (ignored)" help:"Older llama.cpp's --mlock (the reference has --load-mode mlock instead): ignored with a warning; bankml memory-maps the file."`
	NoMmap       bool    `name:"no-mmap" group:"llama.cpp (ignored)" help:"Older llama.cpp's --no-mmap (the reference has --load-mode none instead): ignored with a warning; bankml memory-maps the file."`
}

// llamaLoadModes are the values common/arg.cpp's --load-mode accepts.
var llamaLoadModes = []string{"auto", "none", "mmap", "mlock", "mmap+mlock", "dio"}

// warn checks the values given and writes one line per given flag to w: "bankml: FLAG ignored: why". A
// value llama.cpp would refuse is a usage error naming the flag.
func (l *llamaIgnored) warn(cmd string, w io.Writer) error {
	var lines []string
	if l.GPULayers != nil {
		v := *l.GPULayers
		if _, err := strconv.Atoi(v); err != nil && v != "auto" && v != "all" {
			return fmt.Errorf("%s: -ngl/--n-gpu-layers %q: must be a number, auto or all", cmd, v)
		}
		lines = append(lines, fmt.Sprintf("-ngl %s ignored: bankml runs on the CPU only", v))
	}
	if l.FlashAttn != nil {
		v := *l.FlashAttn
		switch v {
		case "on", "enabled", "true", "1", "auto", "-1":
			lines = append(lines, fmt.Sprintf("-fa %s ignored: bankml always runs flash attention, as llama.cpp's default auto does on the CPU", v))
		case "off", "disabled", "false", "0":
			lines = append(lines, fmt.Sprintf("-fa %s ignored: bankml always runs flash attention (llama.cpp's default auto on the CPU); llama.cpp with -fa off takes another attention path whose results may differ in the last bits from bankml's", v))
		default:
			return fmt.Errorf("%s: -fa/--flash-attn %q: must be on, off or auto", cmd, v)
		}
	}
	if l.ContBatching && l.NoContBatch {
		return errors.New(cmd + ": -cb/--cont-batching and -nocb/--no-cont-batching both given")
	}
	if l.ContBatching {
		lines = append(lines, "-cb ignored: each bankml slot decodes on its own (no shared batch to switch)")
	}
	if l.NoContBatch {
		lines = append(lines, "-nocb ignored: each bankml slot decodes on its own (no shared batch to switch)")
	}
	if l.LoadMode != nil {
		if !slices.Contains(llamaLoadModes, *l.LoadMode) {
			return fmt.Errorf("%s: -lm/--load-mode %q: must be one of %s", cmd, *l.LoadMode, strings.Join(llamaLoadModes, ", "))
		}
		lines = append(lines, fmt.Sprintf("-lm %s ignored: bankml memory-maps the model file (only memory use differs, not results)", *l.LoadMode))
	}
	if l.Mlock {
		lines = append(lines, "--mlock ignored: bankml memory-maps the model file and does not lock it in RAM (only memory use differs, not results)")
	}
	if l.NoMmap {
		lines = append(lines, "--no-mmap ignored: bankml memory-maps the model file (only memory use differs, not results)")
	}
	for _, s := range lines {
		if _, err := fmt.Fprintln(w, "bankml: "+s); err != nil {
			return err
		}
	}
	return nil
}
