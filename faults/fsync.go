package faults

import "context"

// ConfigEditor is implemented by Nodes that can read and replace a node's
// configuration file (Scripted): the fsync-on/off brokers fault edits it
// with the broker profile's drivers.ConfigEdit and restarts the node, and
// its undo writes the original back.
type ConfigEditor interface {
	ReadConfig(ctx context.Context, id int32) (string, error)
	// WriteConfig replaces the file atomically and durably (fsynced, and
	// its directory too, before it returns): a power-loss fault after an
	// fsync toggle, or after its restore, must find the file as written,
	// or the node would come back with a setting the run did not choose.
	WriteConfig(ctx context.Context, id int32, content string) error
}
