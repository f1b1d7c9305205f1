"""Local protocol servers for provider tests (real HTTP on 127.0.0.1, scripted per test), and
the retry loop's recording sleep."""
