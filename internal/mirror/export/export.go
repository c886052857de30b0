// Package export writes the typed relations of a mirror
// (internal/mirror/typed), and its tables of downloaded files, into files
// analysts read: one Parquet (or CSV) file per relation, with the
// relation's columns in order and their types, all read from one
// snapshot of the target.
package export

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/foodsafe/foodsafe/internal/mirror/targets"
	"github.com/foodsafe/foodsafe/internal/mirror/typed"
)

// Format is the file format of an export.
type Format string

// The formats of foodsafe-sync export.
const (
	Parquet Format = "parquet"
	CSV     Format = "csv"
)

// File is one file an export wrote.
type File struct {
	Relation string `json:"relation"`
	File     string `json:"file"`
	Rows     int64  `json:"rows"`
	Bytes    int64  `json:"bytes"`
}

// exportRowGroup bounds the rows a Parquet row group holds, which the
// writer keeps in memory until it is complete: memory stays flat
// whatever a relation's size.
const exportRowGroup = 64 * 1024

// Write writes every typed relation the target holds into dir, one file
// per relation named after it (typed_deliveries.parquet), then the
// tables files and file_links (targets.FileTables: empty without
// --files), with the columns in order and their types, all read from one
// snapshot so the files agree with each other. A file is written under a temporary
// name and renamed into place once complete.
func Write(ctx context.Context, t *targets.Target, format Format, dir string) ([]File, error) {
	if format != Parquet && format != CSV {
		return nil, fmt.Errorf("format %q: parquet or csv", format)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var out []File
	err := t.Snapshot(ctx, func(s *targets.Snapshot) error {
		held, err := s.Holds(ctx)
		if err != nil {
			return err
		}
		for _, r := range typed.Relations() {
			if !held[r.Name] {
				continue // a collection the target does not mirror
			}
			e, err := writeRelation(ctx, s, r, format, dir)
			if err != nil {
				return fmt.Errorf("%s: %w", r.Name, err)
			}
			out = append(out, e)
		}
		for _, r := range targets.FileTables() {
			e, err := writeRelation(ctx, s, r, format, dir)
			if err != nil {
				return fmt.Errorf("%s: %w", r.Name, err)
			}
			out = append(out, e)
		}
		return nil
	})
	return out, err
}

// writeRelation writes one relation's file.
func writeRelation(ctx context.Context, s *targets.Snapshot, r *typed.Relation, format Format, dir string) (File, error) {
	name := r.Name + "." + string(format)
	e := File{Relation: r.Name, File: filepath.Join(dir, name)}
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return e, err
	}
	defer os.Remove(f.Name()) // no-op after the rename
	var w rowWriter
	if format == Parquet {
		w = newParquetWriter(f, r)
	} else {
		w, err = newCSVWriter(f, r)
		if err != nil {
			f.Close()
			return e, err
		}
	}
	e.Rows, err = s.Rows(ctx, r, w.write)
	if err == nil {
		err = w.close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return e, err
	}
	if err := os.Rename(f.Name(), e.File); err != nil {
		return e, err
	}
	if fi, err := os.Stat(e.File); err == nil {
		e.Bytes = fi.Size()
	}
	return e, nil
}

type rowWriter interface {
	write([]any) error
	close() error
}
