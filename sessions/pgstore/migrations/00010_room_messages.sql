-- +goose Up
-- The message tool's record of each room's messages (sessions.RoomMessages,
-- issue 14): which platform message ids the gateway saw in a room and which
-- the bot sent itself (own), so the tool edits and deletes only the bot's
-- own messages of the turn's room. seq orders a room's rows; each note
-- trims the room to its newest sessions.RoomMessagesKeep rows.
CREATE TABLE room_messages (
    room       text        COLLATE "C" NOT NULL,
    message_id text        COLLATE "C" NOT NULL,
    own        boolean     NOT NULL DEFAULT false,
    at         timestamptz NOT NULL,
    seq        bigint      GENERATED ALWAYS AS IDENTITY,
    PRIMARY KEY (room, message_id)
);
CREATE INDEX room_messages_room_seq ON room_messages (room, seq);

-- +goose Down
DROP TABLE room_messages;
