package main

// bankml run NAME of a stored model: its Modelfile's settings (PARAMETER, SYSTEM, MESSAGE) apply as bankml
// serve's Ollama API applies them (serve.ModelDefaults, from storeserve.Defaults), beneath the flags given on
// the command line, as Ollama's CLI options override a Modelfile's PARAMETERs.

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/bankml/bankml/sample"
	"github.com/bankml/bankml/serve"
)

// AfterApply (kong's hook once the flags are set) records the flags the command line gave (by kong's name,
// llama.cpp's spellings already rewritten to run's own), so that a stored model's settings apply beneath them.
func (r *runCmd) AfterApply(kctx *kong.Context) error {
	r.given = map[string]bool{}
	for _, p := range kctx.Path {
		if p.Flag != nil {
			r.given[p.Flag.Name] = true
		}
	}
	return nil
}

// modelfileFlags are the run flags (kong's names) that override each Ollama option a Modelfile can give and
// run applies.
var modelfileFlags = map[string]string{
	"temperature": "temp", "top_k": "top-k", "top_p": "top-p", "min_p": "min-p", "typical_p": "typical",
	"repeat_penalty": "repeat-penalty", "repeat_last_n": "repeat-last-n", "presence_penalty": "presence-penalty",
	"frequency_penalty": "frequency-penalty", "seed": "seed", "stop": "reverse-prompt", "num_predict": "n-predict",
	"num_ctx": "ctx-size",
}

// runSettings are what a run generates with: its flags over the stored model's settings (none for a file).
type runSettings struct {
	model    serve.ModelDefaults // the stored model's settings (zero for a file)
	ref      string              // its NAME:TAG, "" for a file
	nPredict int                 // -n, else the model's num_predict
	// modelNPredict: nPredict is the model's num_predict
	modelNPredict bool
	nCtx          int        // the context a prompt and its answer may fill: the engine's, or num_ctx cut to it
	numCtx        bool       // nCtx is the model's num_ctx (-c not given)
	stops         []string   // -r, else the model's stop strings
	stopsBy       string     // what gave stops: "-r", or "NAME:TAG\'s stop"
	engineCtx     int        // the engine's context (-c, else the training context), which num_ctx is cut to
	about         modelAbout // what --chat's /show info prints
}

// settings are the run's settings with the engine's context nCtx and the model's PARAMETERs ms (as
// modelSampling read them); sp is the run's sampling parameters, whose repeat-last-n a Modelfile's -1 (Ollama's
// "num_ctx") sets to the context. A line on info names the settings the model gives, and which flags override
// them; the PARAMETERs bankml does not apply are named as serve names them.
func (r *runCmd) settings(d serve.ModelDefaults, ref string, ms serve.RunSettings, nCtx int, sp *sample.Params, info io.Writer) runSettings {
	s := runSettings{model: d, ref: ref, nPredict: r.NPredict, nCtx: nCtx, stops: r.ReversePrompt, engineCtx: nCtx}
	if ms.Given["num_predict"] && !r.given["n-predict"] {
		s.nPredict, s.modelNPredict = ms.NPredict, true
	}
	if ms.Given["num_ctx"] && !r.given["ctx-size"] {
		s.nCtx, s.numCtx = min(ms.NumCtx, nCtx), true // as serve cuts a request's num_ctx to its slot's context
	}
	if len(s.stops) > 0 {
		s.stopsBy = "-r"
	}
	if ms.Given["stop"] && !r.given["reverse-prompt"] {
		s.stops, s.stopsBy = ms.Stop, ref+"'s stop"
	}
	if ms.RepeatLastNCtx && !r.given["repeat-last-n"] {
		sp.PenaltyLastN = int32(s.nCtx)
	}
	if ref == "" {
		return s
	}
	var said []string
	keys := make([]string, 0, len(d.Options))
	for k := range d.Options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		flag, ok := modelfileFlags[k]
		if !ok {
			continue
		}
		w := k + " " + optionText(d.Options[k])
		if r.given[flag] {
			w += " (--" + flag + " given instead)"
		} else if k == "num_ctx" && ms.NumCtx > nCtx {
			w += fmt.Sprintf(" (cut to the run's context, %d)", nCtx)
		}
		said = append(said, w)
	}
	if d.System != "" {
		switch {
		case !r.Chat:
			said = append(said, "SYSTEM (with --chat only)")
		case r.System != "":
			said = append(said, "SYSTEM (--system given instead)")
		default:
			said = append(said, "SYSTEM")
		}
	}
	if n := len(d.Messages); n > 0 {
		w := fmt.Sprintf("%d MESSAGEs", n)
		if !r.Chat {
			w += " (with --chat only)"
		}
		said = append(said, w)
	}
	if len(said) > 0 {
		fmt.Fprintf(info, "run: %s's Modelfile settings, beneath the flags given: %s\n", ref, strings.Join(said, ", "))
	}
	if len(ms.Ignored) > 0 {
		fmt.Fprintf(info, "bankml: run: %s's PARAMETERs not applied, as bankml serve does not apply them: %s\n", ref, strings.Join(ms.Ignored, ", "))
	}
	return s
}

// optionText writes a PARAMETER's value as the Modelfile gives it (a stop list quoted).
func optionText(v any) string {
	if l, ok := v.([]string); ok {
		q := make([]string, len(l))
		for i, s := range l {
			q[i] = fmt.Sprintf("%q", s)
		}
		return "[" + strings.Join(q, " ") + "]"
	}
	return fmt.Sprint(v)
}
