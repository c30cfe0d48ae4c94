import PushspoolKit

CLI.main(CommandLine.arguments)
