package faults

import "context"

// ConfigEditor is implemented by Nodes that can read and replace a node's
// configuration file (Scripted): the fsync-on/off brokers fault edits it
// with the broker profile's drivers.ConfigEdit and restarts the node.
type ConfigEditor interface {
	ReadConfig(ctx context.Context, id int32) (string, error)
	WriteConfig(ctx context.Context, id int32, content string) error
}
