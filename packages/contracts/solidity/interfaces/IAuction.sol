// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @notice The surface every auction type shares: the factory drives it and indexers follow its events.
interface IAuction {
    enum AuctionStatus {
        Off,
        Running,
        Paused,
        Ended
    }

    /// @dev The tuple the web client sends to the factory: `[supply, rate, finalRate, limit]`.
    ///      Prices are bid-coin base units per whole project token (10**decimals token units).
    struct AuctionParams {
        uint256 numberOfTokensToBeDistributed;
        uint256 rate;
        uint256 finalRate;
        uint256 limit;
    }

    event AuctionStarted(uint256 start, uint256 end);
    event AuctionFinished(uint256 end, uint256 finalPrice);
    event AuctionPaused(uint256 pauseDuration);
    /// @notice A bid of every type but the Dutch ones: `amount` is the bid coin charged.
    event BidSubmission(address indexed sender, uint256 amount);
    /// @notice A Dutch bid (Dutch, StrictDutch, OBDutch), the spec's "Dutch auction form", emitted instead of
    ///         the two-argument form: `amount` charged (OBDutch: the deposit held) at `price` bid coin per whole
    ///         token. An overload, so its topic 0 differs; ethers needs the full signature to name either one.
    event BidSubmission(address indexed sender, uint256 amount, uint256 price);
    /// @notice Progress of the auction: the named public variable now holds `value`.
    event VariableChange(string variable, uint256 value);
    /// @notice Tokens bought at bid time (delivered at once, or owed until the auction ends).
    event TokenBought(address indexed buyer, uint256 usedBidCoinAmount, uint256 boughtTokenAmount);
    event Claimed(address indexed bidder, uint256 tokenAmount, uint256 refundAmount);
    /// @notice The spec's claim event, right after every `Claimed` (the log before it names the bidder).
    ///         `round` is always 0: every auction here sells in one round. `amount`: tokens (0 for a
    ///         refund-only order-book claim).
    event ClaimTokens(uint256 round, uint256 amount);
    event ProjectWalletChanged(address indexed wallet);

    error NotFactory(address caller);
    error NotProposer(address caller);
    error InvalidParams(string reason);
    error InvalidDuration();
    error InvalidAddress();
    error AuctionNotOff(AuctionStatus status);
    error AuctionNotRunning(AuctionStatus status);
    error AuctionNotEnded(AuctionStatus status);
    error AuctionAlreadyEnded();
    error ProposerCannotBid(address caller);
    error ZeroAmount();
    error BidTooSmall(uint256 amount);
    error LimitExceeded(uint256 requested, uint256 limit);
    error NothingToClaim(address bidder);
    error SupplyNotFunded(uint256 balance, uint256 supply);
    error MissingMinterRole();

    function initialize(address token, address bidCoin, address proposer, AuctionParams calldata params) external;

    function startAuction(uint256 durationSeconds) external;

    function pauseAuction(uint256 pauseSeconds) external;

    function forceFinish() external;

    function manualFinish() external;

    function bid(uint256 amount) external;

    function withDraw() external;

    function setProjectWallet(address wallet) external;

    function status() external view returns (AuctionStatus);

    function getStatus() external view returns (AuctionStatus);

    function getCurrentRate() external view returns (uint256);

    function proposer() external view returns (address);

    function projectWallet() external view returns (address);

    function startTime() external view returns (uint256);

    function latestEndTime() external view returns (uint256);

    function totalDepositedSucoins() external view returns (uint256);

    function soldProjectTokens() external view returns (uint256);
}
