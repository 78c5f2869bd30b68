package main

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/alecthomas/kong"
)

// pathMapper is the mapper of every type:"path" argument and flag: kong's own (the path made absolute, ~/
// expanded, "-" kept, a slice decoded element by element), except that an empty value given for an argument
// or a flag without a default is refused ("the file name is empty"): kong's would make it the current folder,
// so that `quantize IN ""` named the working directory as the file to write.
type pathMapper struct{ kong kong.Mapper }

// newPathMapper wraps kong's "path" mapper.
func newPathMapper() pathMapper {
	return pathMapper{kong: kong.NewRegistry().RegisterDefaults().ForNamedValue("path", reflect.ValueOf(""))}
}

// Decode implements kong.Mapper.
func (m pathMapper) Decode(ctx *kong.DecodeContext, target reflect.Value) error {
	if target.Kind() != reflect.Slice && !ctx.Value.HasDefault {
		if t := ctx.Scan.Peek(); t.IsValue() && fmt.Sprint(t.Value) == "" {
			return errors.New("the file name is empty")
		}
	}
	return m.kong.Decode(ctx, target)
}
