"""The command line clients of a running stack: chat, invoke, resume, get, frames and the demo."""
