package model

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/bankml/bankml/gguf"
)

// stateMagic opens a context's state file (WriteState); stateVersion is its
// layout.
const (
	stateMagic   = "BANKMLKV"
	stateVersion = 2
)

// ErrState is wrapped by ReadState's refusals of a file: damaged, of
// another model or shape, or too long for the context.
var ErrState = errors.New("invalid slot save file")

// WriteState writes c's cache to w in bankml's slot file layout, as
// llama_state_seq_save_file writes a sequence's tokens and cells (a
// different layout: llama.cpp's files are not read here): the magic
// "BANKMLKV", the layout version, modelID (the caller's identity of the
// model file, e.g. its sha256, so that a file from another model is
// refused), the shapes (layers, KV heads, head size), the cache types (K,
// V: ggml type ids), the mirrored attention thread count, the tokens, each
// cell's class, every layer's K and V cells (f16 values or the quantized
// type's blocks), and the sha256 of all that, so that a file damaged by one
// bit is refused. It returns the bytes written.
func (c *Context) WriteState(w io.Writer, modelID string) (int64, error) {
	h := sha256.New()
	cw := &countWriter{w: w}
	bw := bufio.NewWriterSize(io.MultiWriter(cw, h), 1<<20)
	hp := c.m.HP
	n := len(c.tokens)
	le := binary.LittleEndian
	bw.WriteString(stateMagic)
	for _, x := range []uint32{stateVersion, uint32(len(modelID))} {
		_ = binary.Write(bw, le, x)
	}
	bw.WriteString(modelID)
	for _, x := range []uint32{uint32(hp.NLayer), uint32(hp.NHeadKV), uint32(hp.HeadDim), uint32(c.types.K), uint32(c.types.V),
		uint32(c.attnThreads), uint32(n)} {
		_ = binary.Write(bw, le, x)
	}
	_ = binary.Write(bw, le, c.tokens)
	bw.Write(c.sigs)
	nkv := hp.NHeadKV * hp.HeadDim
	bk, bv := rowBytes(c.types.K, nkv), rowBytes(c.types.V, nkv)
	for il := range c.k {
		if c.types.K == gguf.F16 {
			_ = binary.Write(bw, le, c.k[il][:n*nkv])
		} else {
			bw.Write(c.kq[il][:n*bk])
		}
		if c.types.V == gguf.F16 {
			_ = binary.Write(bw, le, c.v[il][:n*nkv])
		} else {
			bw.Write(c.vq[il][:n*bv])
		}
	}
	err := bw.Flush()
	if err == nil {
		_, err = cw.Write(h.Sum(nil))
	}
	if err != nil {
		return cw.n, fmt.Errorf("model: writing the slot state: %w", err)
	}
	return cw.n, nil
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// ReadState replaces c's cache with the state WriteState wrote to r (the
// whole of r), and returns the bytes read. It refuses, wrapping ErrState
// and naming the reason, a file whose checksum does not match its contents
// (one flipped bit), another magic or version, another modelID, other
// shapes, other cache types, more tokens than the context holds, or a
// token outside the vocabulary; c is then unchanged. Cells saved with another attention
// thread count keep their tokens but match no fresh evaluation
// (ExactPrefix keeps none of them).
func (c *Context) ReadState(r io.Reader, modelID string) (int64, error) {
	hp := c.m.HP
	nkv := hp.NHeadKV * hp.HeadDim
	bk, bv := rowBytes(c.types.K, nkv), rowBytes(c.types.V, nkv)
	// The largest valid file for this context, plus one byte to see more.
	limit := int64(len(stateMagic)+8+len(modelID)+28) + int64(c.nCtx)*int64(5+hp.NLayer*(bk+bv)) + sha256.Size + 1
	data, err := io.ReadAll(io.LimitReader(r, limit))
	if err != nil {
		return 0, fmt.Errorf("model: reading the slot state: %w", err)
	}
	nr := int64(len(data))
	bad := func(format string, a ...any) (int64, error) {
		return nr, fmt.Errorf("model: %s: %w", fmt.Sprintf(format, a...), ErrState)
	}
	if nr == limit {
		return bad("the file is larger than a state of %d tokens", c.nCtx)
	}
	if nr < int64(len(stateMagic))+8+sha256.Size {
		return bad("%d bytes, too short", nr)
	}
	body, sum := data[:nr-sha256.Size], data[nr-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return bad("the checksum does not match the contents (the file is damaged)")
	}
	if string(body[:len(stateMagic)]) != stateMagic {
		return bad("not a bankml slot file")
	}
	rd := bytes.NewReader(body[len(stateMagic):])
	get := func() uint32 {
		var x uint32
		_ = binary.Read(rd, binary.LittleEndian, &x)
		return x
	}
	if v := get(); v != stateVersion {
		return bad("layout version %d (this build reads %d)", v, stateVersion)
	}
	idLen := int(get())
	if idLen > rd.Len() {
		return bad("truncated")
	}
	id := make([]byte, idLen)
	_, _ = rd.Read(id)
	if string(id) != modelID {
		return bad("saved from model %q, this slot runs %q", id, modelID)
	}
	nLayer, nHeadKV, headDim, typeK, typeV, attn, n := get(), get(), get(), gguf.GGMLType(get()), gguf.GGMLType(get()), get(), int(get())
	if int(nLayer) != hp.NLayer || int(nHeadKV) != hp.NHeadKV || int(headDim) != hp.HeadDim {
		return bad("shapes %d layers × %d KV heads × %d, the model's %d × %d × %d", nLayer, nHeadKV, headDim, hp.NLayer, hp.NHeadKV, hp.HeadDim)
	}
	if typeK != c.types.K || typeV != c.types.V {
		return bad("cache types K %s, V %s; this slot's cache is K %s, V %s", typeK, typeV, c.types.K, c.types.V)
	}
	if n > c.nCtx {
		return bad("%d tokens do not fit the slot's context of %d", n, c.nCtx)
	}
	if rd.Len() != n*5+hp.NLayer*n*(bk+bv) {
		return bad("%d bytes of cells for %d tokens", rd.Len(), n)
	}
	tokens := make([]int32, n)
	_ = binary.Read(rd, binary.LittleEndian, tokens)
	for i, t := range tokens {
		if t < 0 || int(t) >= hp.NVocab {
			return bad("token %d is %d, outside the vocabulary of %d", i, t, hp.NVocab)
		}
	}
	sigs := make([]uint8, n)
	_, _ = rd.Read(sigs)
	if err := c.Truncate(0); err != nil {
		return nr, err
	}
	c.grow(n)
	for il := range c.k {
		if c.types.K == gguf.F16 {
			_ = binary.Read(rd, binary.LittleEndian, c.k[il][:n*nkv])
		} else {
			_, _ = rd.Read(c.kq[il][:n*bk])
		}
		if c.types.V == gguf.F16 {
			_ = binary.Read(rd, binary.LittleEndian, c.v[il][:n*nkv])
		} else {
			_, _ = rd.Read(c.vq[il][:n*bv])
		}
	}
	if int(attn) != c.attnThreads {
		clear(sigs)
	}
	c.tokens, c.sigs = tokens, sigs
	return nr, nil
}
