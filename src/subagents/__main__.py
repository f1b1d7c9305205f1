from subagents.cli.app import main

main()
