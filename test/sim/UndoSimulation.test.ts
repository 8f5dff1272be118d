import { undoSimulationSuite } from "./undoSuite.ts"

undoSimulationSuite("memory")
