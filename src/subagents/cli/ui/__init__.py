"""What the terminal shows while agents run: the progress lines of `run` (progress), the live
UI of `run --ui` (live, over the block model of blocks) and the chat app (chat_app, chat_view)."""
