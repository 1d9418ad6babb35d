// Package telegramtest is a fake Telegram Bot API server for tests and load
// generators: it speaks the real HTTP protocol (form-encoded POSTs to
// /bot<token>/<method>, {"ok":...} answers), so the real tgbotapi client and
// the telegram adapter talk to it unchanged.
//
// It implements getMe, getUpdates (long poll with offsets and timeout;
// updates below the offset are confirmed and forgotten; an offset past the
// end of the queue is answered from its head, confirming nothing, as the
// Bot API server does; a newer poll ends an older one with 409),
// sendMessage (validates Telegram HTML, text its markup leaves empty and
// the 4096-character limit, rejects message_thread_id 1 and messages to
// migrated groups), sendChatAction, editMessageText, setMessageReaction
// (recorded: Reactions), getChatMember (statuses set with SetChatMember,
// "member" by default; calls recorded: MemberLookups), setWebhook and
// deleteWebhook (getUpdates answers 409 while a webhook is set). Failures
// (409, 429 with retry_after, entity rejection) are injected with FailNext.
//
// Webhook mode: DeliverWebhook posts one update; a Balancer posts every
// pending update round-robin over several targets (replicas behind a load
// balancer). Several clients are told apart by the API root each is given
// (Via): what each sent is recorded with its tag.
//
// Tests inject updates with AddMessage and its helpers (DM, Group, Topic)
// and wait for the bot's output with WaitSent, WaitActions and
// WaitConfirmed. Every method is safe for concurrent use; Close ends
// pending long polls at once.
//
// Every error answer, injected or the server's own 409 to a poll a newer
// one ended, is recorded (ErrorAnswers): a test counts the conflicts two
// concurrent pollers cause.
package telegramtest
