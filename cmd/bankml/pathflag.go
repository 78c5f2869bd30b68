package main

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/alecthomas/kong"
)

// pathMapper is the mapper of every type:"path" argument and flag: kong's own (the path made absolute, ~/
// expanded, "-" kept, a slice decoded element by element), except that an empty value given for an argument
// or a flag without a default is refused ("the file name is empty"), one element of a list of files too
// (sha256's FILE ...): kong's would make it the current folder, so that `quantize IN ""` named the working
// directory as the file to write and `sha256 ""` tried to hash the working directory.
type pathMapper struct{ kong kong.Mapper }

// newPathMapper wraps kong's "path" mapper.
func newPathMapper() pathMapper {
	return pathMapper{kong: kong.NewRegistry().RegisterDefaults().ForNamedValue("path", reflect.ValueOf(""))}
}

// Decode implements kong.Mapper.
func (m pathMapper) Decode(ctx *kong.DecodeContext, target reflect.Value) error {
	if target.Kind() == reflect.Slice && !ctx.Value.HasDefault {
		var values []string
		if ctx.Value.Flag != nil { // --flag a,b: one value, split at the flag's separator
			if t := ctx.Scan.Peek(); t.IsValue() {
				if v, ok := t.Value.(string); ok {
					values = []string{v}
					if ctx.Value.Tag.Sep != -1 {
						values = kong.SplitEscaped(v, ctx.Value.Tag.Sep)
					}
				}
			}
		} else { // the arguments: every value up to the next flag, which kong's decodes as the list
			tokens := ctx.Scan.PopWhile(func(t kong.Token) bool { return t.IsValue() })
			for _, t := range tokens {
				values = append(values, fmt.Sprint(t.Value))
			}
			ctx = ctx.WithScanner(kong.ScanFromTokens(tokens...))
		}
		for i, v := range values {
			if v == "" {
				if len(values) == 1 {
					return errors.New("the file name is empty")
				}
				return fmt.Errorf("file name %d of %d is empty", i+1, len(values))
			}
		}
		return m.kong.Decode(ctx, target)
	}
	if target.Kind() != reflect.Slice && !ctx.Value.HasDefault {
		if t := ctx.Scan.Peek(); t.IsValue() && fmt.Sprint(t.Value) == "" {
			return errors.New("the file name is empty")
		}
	}
	return m.kong.Decode(ctx, target)
}

// modelMapper is the mapper of a type:"model" argument (serve's MODEL: a GGUF file or a store NAME[:TAG]): the
// value as given, except that an empty one is refused, where kong's would read it as no MODEL at all (serve then
// served the whole store).
type modelMapper struct{}

// Decode implements kong.Mapper.
func (modelMapper) Decode(ctx *kong.DecodeContext, target reflect.Value) error {
	var v string
	if err := ctx.Scan.PopValueInto("model", &v); err != nil {
		return err
	}
	if v == "" {
		return errors.New("the model is empty: give a GGUF file or a model NAME[:TAG]")
	}
	target.SetString(v)
	return nil
}
