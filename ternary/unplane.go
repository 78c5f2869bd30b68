package ternary

import (
	"fmt"
	"io"

	"github.com/bankml/bankml/gguf"
)

// Unplane writes src, a PTQTP file whose matrices have one plane each (K =
// 1), as the equivalent ordinary GGUF file to w: every "<name>.ptqtp0" is
// stored under its base name "<name>", byte for byte (a one-plane matrix is
// an ordinary TQ2_0 or Q2_0 tensor: W = P0), and the fucina.ptqtp.version key
// is dropped; every other key and tensor is copied in order. Mainline
// llama.cpp runs the result, so it is the reference's counterpart of a K=1
// PTQTP file (the oracle of bankml's plane loader). Errors: a matrix with
// more than one plane (K > 1 has no single-tensor equivalent), planes
// LoadPlanes refuses, and errors of w, wrapped.
func Unplane(src *gguf.File, w io.Writer) error {
	var kvs []gguf.KV
	for _, kv := range src.KVs {
		if kv.Key != VersionKey {
			kvs = append(kvs, kv)
		}
	}
	infos := make([]gguf.TensorInfo, len(src.Tensors))
	for i, t := range src.Tensors {
		infos[i] = gguf.TensorInfo{Name: t.Name, Ne: t.Ne, Type: t.Type}
		base, p, ok := ParsePlaneName(t.Name)
		if !ok {
			continue
		}
		l, err := LoadPlanes(src, base)
		if err != nil {
			return fmt.Errorf("ternary: unplane: %w", err)
		}
		if l == nil {
			return fmt.Errorf("ternary: unplane: %s without %s: %w", t.Name, VersionKey, ErrInvalidPlaneSet)
		}
		if len(l.Planes) != 1 || p != 0 {
			return fmt.Errorf("ternary: unplane: %s has %d planes; only K=1 matrices are ordinary tensors", base, len(l.Planes))
		}
		infos[i].Name = base
	}
	gw, err := gguf.NewWriter(w, kvs, infos)
	if err != nil {
		return fmt.Errorf("ternary: unplane: %w", err)
	}
	for i := range src.Tensors {
		if err := gw.WriteTensor(src.TensorData(&src.Tensors[i])); err != nil {
			return fmt.Errorf("ternary: unplane: %s: %w", src.Tensors[i].Name, err)
		}
	}
	if err := gw.Close(); err != nil {
		return fmt.Errorf("ternary: unplane: %w", err)
	}
	return nil
}
