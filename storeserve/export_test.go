package storeserve

import "context"

// Hold takes name as a request does (loading it when needed) and returns the release that ends it: the
// tests' way to keep a model busy for as long as they need.
func (r *Router) Hold(ctx context.Context, name string) (release func(), err error) {
	l, err := r.acquire(ctx, name)
	if err != nil {
		return nil, err
	}
	return func() { r.release(l, nil) }, nil
}
