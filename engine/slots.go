package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/bankml/bankml/model"
)

// ErrInvalidSlot is returned by the slot actions for an id outside
// [0, Parallel) (llama-server answers "Invalid slot ID").
var ErrInvalidSlot = errors.New("engine: invalid slot id")

// ErrNoModelID is returned by SaveSlot and RestoreSlot when Options.ModelID
// is empty: a slot file names the model it was saved from.
var ErrNoModelID = errors.New("engine: slot files need Options.ModelID (the model file's identity, e.g. its sha256)")

// SlotFile is the outcome of SaveSlot or RestoreSlot
// (server_task_result_slot_save_load).
type SlotFile struct {
	Slot   int     // id_slot
	Tokens int     // n_saved / n_restored: the tokens the slot's cache holds
	Bytes  int64   // n_written / n_read
	MS     float64 // timings.save_ms / timings.restore_ms
}

// RestoreError is a refused restore: llama-server answers it with 400
// invalid_request_error "Unable to restore slot: " and the reason; the slot
// is then empty, as llama-server clears it.
type RestoreError struct{ Err error }

func (e *RestoreError) Error() string { return "Unable to restore slot: " + e.Err.Error() }
func (e *RestoreError) Unwrap() error { return e.Err }

// SaveError is a failed save (llama-server: 500 server_error "Unable to save
// slot").
type SaveError struct{ Err error }

func (e *SaveError) Error() string { return "Unable to save slot: " + e.Err.Error() }
func (e *SaveError) Unwrap() error { return e.Err }

// SaveSlot writes slot id's cache (its tokens and KV cells,
// model.Context.WriteState) to path, waiting until the slot is free, as
// llama-server's SLOT_SAVE task waits for the slot. Errors: ErrInvalidSlot,
// ErrNoModelID, a *SaveError, ctx.Err(), ErrClosed.
func (e *Engine) SaveSlot(ctx context.Context, id int, path string) (SlotFile, error) {
	if e.o.ModelID == "" {
		return SlotFile{}, ErrNoModelID
	}
	var out SlotFile
	err := e.slotAction(ctx, id, true, func(c *model.Context, _ int) error {
		t0 := time.Now()
		f, err := os.CreateTemp(filepath.Dir(path), ".slot-*")
		if err != nil {
			return &SaveError{err}
		}
		n, err := c.WriteState(f, e.o.ModelID)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(f.Name(), path)
		}
		if err != nil {
			os.Remove(f.Name())
			return &SaveError{err}
		}
		out = SlotFile{Slot: id, Tokens: c.NPast(), Bytes: n, MS: ms(time.Since(t0))}
		return nil
	})
	return out, err
}

// RestoreSlot replaces slot id's cache with the file SaveSlot wrote to
// path, waiting until the slot is free. A file that is missing, damaged
// (one flipped bit), saved from another model (Options.ModelID) or too long
// for the slot is refused with a *RestoreError and leaves the slot empty,
// as llama-server clears it. The next request keeps the restored cells by
// CacheReuse's rule (under "exact": those a fresh evaluation computes
// alike). Errors besides: ErrInvalidSlot, ErrNoModelID, ctx.Err(),
// ErrClosed.
func (e *Engine) RestoreSlot(ctx context.Context, id int, path string) (SlotFile, error) {
	if e.o.ModelID == "" {
		return SlotFile{}, ErrNoModelID
	}
	var out SlotFile
	err := e.slotAction(ctx, id, false, func(c *model.Context, _ int) error {
		t0 := time.Now()
		f, err := os.Open(path)
		if err != nil {
			_ = c.Truncate(0)
			return &RestoreError{err}
		}
		defer f.Close()
		n, err := c.ReadState(f, e.o.ModelID)
		if err != nil {
			_ = c.Truncate(0)
			return &RestoreError{err}
		}
		out = SlotFile{Slot: id, Tokens: c.NPast(), Bytes: n, MS: ms(time.Since(t0))}
		return nil
	})
	return out, err
}

// EraseSlot empties slot id's cache, waiting until the slot is free, and
// returns the tokens it held (n_erased). Errors: ErrInvalidSlot, ctx.Err(),
// ErrClosed.
func (e *Engine) EraseSlot(ctx context.Context, id int) (int, error) {
	n := 0
	err := e.slotAction(ctx, id, false, func(c *model.Context, unsettled int) error {
		n = c.NPast() + unsettled
		return c.Truncate(0)
	})
	return n, err
}

// slotAction acquires slot id (waiting while it is busy) and runs act on
// its context on the scheduler, between steps. An idle slot may be
// settling (settle: its last answer's cells dropped, to be re-evaluated):
// with finish the rest is re-evaluated first, so that act sees every token
// the slot holds (llama-server's slot->prompt.tokens: a save writes them
// all); otherwise it is dropped and act is told how many tokens that was.
func (e *Engine) slotAction(ctx context.Context, id int, finish bool, act func(c *model.Context, unsettled int) error) error {
	if id < 0 || id >= len(e.slots) {
		return ErrInvalidSlot
	}
	s, err := e.acquire(ctx, nil, id, true)
	if err != nil {
		return err
	}
	defer e.release(s)
	_, err = e.submit(ctx, &job{s: s, act: func(c *model.Context) error {
		e.mu.Lock()
		rest := s.settle
		s.settle = nil
		e.mu.Unlock()
		if !finish {
			return act(c, len(rest))
		}
		for len(rest) > 0 {
			n := settleStep(c.NPast(), len(rest))
			if err := e.runner.Decode(model.SettleSpans(c, rest[:n], c.NPast())); err != nil {
				return fmt.Errorf("engine: slot %d: re-evaluating its last answer: %w", s.id, err)
			}
			rest = rest[n:]
		}
		return act(c, 0)
	}})
	return err
}

// runAction runs an action job on the scheduler: the slot's context made
// if needed, any settling dropped (a slot action's own job deals with it
// first, slotAction).
func (e *Engine) runAction(j *job) error {
	s := j.s
	if err := e.ensureContext(s); err != nil {
		return err
	}
	err := j.act(s.ctx)
	e.mu.Lock()
	s.settle = nil
	e.mu.Unlock()
	return err
}
