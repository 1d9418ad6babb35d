package discordtest

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/bwmarrin/discordgo"
)

// Message components and their presses, as Discord has them: a message
// posted with "components" (action rows of buttons, custom_id at most 100
// characters, at most 5 buttons a row and 5 rows) shows them; a press is
// an INTERACTION_CREATE of type 3 (MESSAGE_COMPONENT) carrying the message
// with its components as they show now and data {custom_id,
// component_type}; its callback may be 7 (UPDATE_MESSAGE, whose data's
// components replace the message's) or 6 (DEFERRED_UPDATE_MESSAGE, an
// acknowledgement that changes nothing), or a message (4).

// componentsFake is the fake's component state, guarded by Server.mu.
type componentsFake struct {
	rows map[string][]discordgo.ActionsRow // by message id, as they show now
}

// parseComponents decodes a message's components; ok is false for what
// Discord refuses (a row of more than 5, a button without a label or
// with a custom_id over 100 characters, more than 5 rows).
func parseComponents(raw json.RawMessage) (rows []discordgo.ActionsRow, ok bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, true
	}
	if json.Unmarshal(raw, &rows) != nil || len(rows) > 5 {
		return nil, false
	}
	for _, r := range rows {
		if len(r.Components) == 0 || len(r.Components) > 5 {
			return nil, false
		}
		for _, c := range r.Components {
			b, isButton := c.(*discordgo.Button)
			if isButton && (b.Label == "" || len(b.CustomID) > 100 || (b.CustomID == "" && b.URL == "")) {
				return nil, false
			}
		}
	}
	return rows, true
}

func (s *Server) setComponentsLocked(messageID string, rows []discordgo.ActionsRow) {
	if s.comps.rows == nil {
		s.comps.rows = map[string][]discordgo.ActionsRow{}
	}
	if len(rows) == 0 {
		delete(s.comps.rows, messageID)
		return
	}
	s.comps.rows[messageID] = rows
}

func asComponents(rows []discordgo.ActionsRow) []discordgo.MessageComponent {
	var out []discordgo.MessageComponent
	for i := range rows {
		r := rows[i]
		out = append(out, &r)
	}
	return out
}

// withMessageComponents is i as Discord sends it: discordgo's Message
// leaves its components out when marshalled (it only reads them), so they
// are put back into the message object by hand.
func withMessageComponents(i *discordgo.Interaction) any {
	if i.Message == nil || len(i.Message.Components) == 0 {
		return i
	}
	raw, err := json.Marshal(i)
	if err != nil {
		panic("discordtest: marshal interaction: " + err.Error())
	}
	var obj map[string]json.RawMessage
	var msg map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || json.Unmarshal(obj["message"], &msg) != nil {
		panic("discordtest: interaction is not an object")
	}
	comps, err := json.Marshal(i.Message.Components)
	if err != nil {
		panic("discordtest: marshal components: " + err.Error())
	}
	msg["components"] = comps
	obj["message"], _ = json.Marshal(msg)
	return obj
}

// Buttons returns the buttons message id shows now, row by row.
func (s *Server) Buttons(messageID string) [][]discordgo.Button {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out [][]discordgo.Button
	for _, r := range s.comps.rows[messageID] {
		var row []discordgo.Button
		for _, c := range r.Components {
			if b, ok := c.(*discordgo.Button); ok {
				row = append(row, *b)
			}
		}
		out = append(out, row)
	}
	return out
}

// ButtonPress builds the MESSAGE_COMPONENT interaction of user pressing
// the button labelled label on message messageID of channelID, as the
// message shows now; ok is false when it shows no such enabled button
// (Discord clients cannot press a disabled one).
func (s *Server) ButtonPress(channelID, messageID string, user *discordgo.User, label string) (i *discordgo.Interaction, ok bool) {
	s.mu.Lock()
	var id string
	for _, r := range s.comps.rows[messageID] {
		for _, c := range r.Components {
			if b, isButton := c.(*discordgo.Button); isButton && b.Label == label && !b.Disabled {
				id, ok = b.CustomID, true
			}
		}
	}
	s.mu.Unlock()
	if !ok {
		return nil, false
	}
	return s.ComponentPress(channelID, messageID, user, id), true
}

// ComponentPress builds a MESSAGE_COMPONENT interaction with any
// custom_id (a forged one, for tests); send it with SendInteraction.
func (s *Server) ComponentPress(channelID, messageID string, user *discordgo.User, customID string) *discordgo.Interaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	content, _ := s.liveLocked(channelID, messageID)
	msg := &discordgo.Message{ID: messageID, ChannelID: channelID, Content: content, Author: s.opts.BotUser,
		Timestamp: time.Now().UTC(), Components: asComponents(s.comps.rows[messageID])}
	i := &discordgo.Interaction{Type: discordgo.InteractionMessageComponent, ChannelID: channelID, Message: msg,
		Data: discordgo.MessageComponentInteractionData{CustomID: customID, ComponentType: discordgo.ButtonComponent}}
	if c, ok := s.channels[channelID]; ok {
		i.GuildID = c.GuildID
	}
	if i.GuildID != "" {
		i.Member = s.slashMemberLocked(i.GuildID, channelID, user)
	} else {
		i.User = user
	}
	return i
}

// WaitButtonsChanged waits until message id's buttons are not want (as
// Buttons returns them) and returns them.
func (s *Server) WaitButtonsChanged(ctx context.Context, id string, before [][]discordgo.Button) ([][]discordgo.Button, error) {
	err := s.wait(ctx, func() bool {
		var now [][]discordgo.Button
		for _, r := range s.comps.rows[id] {
			var row []discordgo.Button
			for _, c := range r.Components {
				if b, ok := c.(*discordgo.Button); ok {
					row = append(row, *b)
				}
			}
			now = append(now, row)
		}
		return !slices.EqualFunc(now, before, func(a, b []discordgo.Button) bool { return slices.Equal(a, b) })
	})
	return s.Buttons(id), err
}
