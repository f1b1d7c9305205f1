"""Local protocol servers for provider tests: real HTTP on 127.0.0.1, scripted per test."""
