package channels

import "context"

// IDChunker is implemented by Chunkers that tell the platform id of the
// message each chunk became. The dispatcher records the ids of the bot's
// own messages per room so the agents' message tool may edit or delete
// them (and nothing else).
type IDChunker interface {
	// SendChunkID is Chunker.SendChunk, also returning the id of the
	// platform message that shows the chunk ("" when the platform gave
	// none, e.g. a reply through a Discord interaction).
	SendChunkID(ctx context.Context, out Outbound, i int, chunk string) (id string, err error)
}
