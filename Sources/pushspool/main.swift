import PushspoolCLI

CLI.main(CommandLine.arguments)
