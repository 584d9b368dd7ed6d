// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {Initializable} from "@openzeppelin/contracts/proxy/utils/Initializable.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";
import {Multicall} from "@openzeppelin/contracts/utils/Multicall.sol";
import {ReentrancyGuardTransient} from "@openzeppelin/contracts/utils/ReentrancyGuardTransient.sol";
import {IAuction} from "../interfaces/IAuction.sol";
import {IProjectToken} from "../interfaces/IProjectToken.sol";

/// @title Common life cycle of every auction type.
/// @notice Off -> Running (startAuction) -> Paused (factory) -> Running (once the pause has passed) -> Ended
///         (time up, sold out, or forced by the factory). Moves that depend only on time are applied lazily by
///         the next state-changing call; `getStatus()` always reports the effective status.
/// @dev Deployed once per type as an implementation; the factory creates EIP-1167 clones and initializes them.
///      `multicall` lets the web client read many getters in one call.
abstract contract Auction is IAuction, Initializable, ReentrancyGuardTransient, Multicall {
    using SafeERC20 for IERC20;

    /// @notice Role identifiers of the first implementation's auctions, kept as getters only (here the factory
    ///         is the only admin and `proposer` the only proposer). Its web client multicalls every zero-argument
    ///         getter of its own auction ABI, and a single missing one fails the whole read.
    bytes32 public constant DEFAULT_ADMIN_ROLE = 0x00;
    bytes32 public constant PROPOSER_ROLE = keccak256("PROPOSER_ROLE");
    bytes32 public constant PROPOSER_ADMIN_ROLE = keccak256("PROPOSER_ADMIN_ROLE");

    address public factory;
    address public override proposer;
    /// @notice Receives the bid coin (at bid time, or at the end for the order-book Dutch type) and unsold supply.
    address public override projectWallet;
    IERC20 public bidCoin;
    IProjectToken public projectToken;

    /// @notice Raw stored status; it may lag behind `getStatus()` until the next state-changing call.
    AuctionStatus public override status;
    uint256 public override startTime;
    /// @notice End of the auction in seconds since the epoch, pushed back by every pause.
    uint256 public override latestEndTime;
    /// @notice Running time in seconds the auction was started with, pauses excluded.
    uint256 public duration;
    uint256 public pausedUntil;
    uint256 public override totalDepositedSucoins;
    uint256 public override soldProjectTokens;

    /// @dev 10**decimals of the project token: prices are bid-coin units per whole token.
    uint256 internal _unit;

    modifier onlyFactory() {
        if (msg.sender != factory) revert NotFactory(msg.sender);
        _;
    }

    modifier onlyProposer() {
        if (msg.sender != proposer) revert NotProposer(msg.sender);
        _;
    }

    /// @custom:oz-upgrades-unsafe-allow constructor
    constructor() {
        _disableInitializers();
    }

    function initialize(
        address token,
        address bidCoin_,
        address proposer_,
        AuctionParams calldata params
    ) external initializer {
        if (token == address(0) || bidCoin_ == address(0) || proposer_ == address(0)) revert InvalidAddress();
        factory = msg.sender;
        proposer = proposer_;
        projectWallet = proposer_;
        projectToken = IProjectToken(token);
        bidCoin = IERC20(bidCoin_);
        _unit = 10 ** projectToken.decimals();
        _initialize(params);
    }

    // ---------------------------------------------------------------- life cycle

    /// @param durationSeconds Running time; the first implementation called these "hours" but counted seconds.
    function startAuction(uint256 durationSeconds) external onlyProposer {
        if (status != AuctionStatus.Off) revert AuctionNotOff(status);
        if (durationSeconds == 0) revert InvalidDuration();
        _beforeStart();
        status = AuctionStatus.Running;
        startTime = block.timestamp;
        duration = durationSeconds;
        latestEndTime = block.timestamp + durationSeconds;
        emit AuctionStarted(startTime, latestEndTime);
    }

    function pauseAuction(uint256 pauseSeconds) external onlyFactory nonReentrant {
        _sync();
        if (status != AuctionStatus.Running) revert AuctionNotRunning(status);
        if (pauseSeconds == 0) revert InvalidDuration();
        pausedUntil = block.timestamp + pauseSeconds;
        latestEndTime += pauseSeconds;
        status = AuctionStatus.Paused;
        emit AuctionPaused(pauseSeconds);
    }

    /// @notice Ends the auction now from Off, Running or Paused.
    function forceFinish() external onlyFactory nonReentrant {
        if (status == AuctionStatus.Ended) revert AuctionAlreadyEnded();
        _sync();
        if (status != AuctionStatus.Ended) _finish();
    }

    /// @notice Applies an end that time (or supply) has already decided; anyone may call it.
    function manualFinish() external nonReentrant {
        _sync();
        if (status != AuctionStatus.Ended) revert AuctionNotEnded(status);
    }

    function setProjectWallet(address wallet) external onlyProposer {
        // Funds sent to the auction itself could never leave it.
        if (wallet == address(0) || wallet == address(this)) revert InvalidAddress();
        if (getStatus() == AuctionStatus.Ended) revert AuctionAlreadyEnded();
        projectWallet = wallet;
        emit ProjectWalletChanged(wallet);
    }

    function getStatus() public view returns (AuctionStatus current) {
        current = status;
        if (current == AuctionStatus.Paused && block.timestamp >= pausedUntil) current = AuctionStatus.Running;
        if (current == AuctionStatus.Running && _shouldEnd()) current = AuctionStatus.Ended;
    }

    function getCurrentRate() public view virtual returns (uint256);

    // ---------------------------------------------------------------- bidding

    /// @param amount Bid coin offered; a type charges only what buys whole token units (see `_costOf`).
    function bid(uint256 amount) external nonReentrant {
        _beginBid(amount);
        _placeBid(msg.sender, amount);
    }

    /// @notice Claims tokens and refunds after the end (order-book and pseudo-capped types).
    function withDraw() external nonReentrant {
        _sync();
        if (status != AuctionStatus.Ended) revert AuctionNotEnded(status);
        _claim(msg.sender);
    }

    // ---------------------------------------------------------------- hooks

    function _initialize(AuctionParams calldata params) internal virtual;

    function _beforeStart() internal view virtual {}

    function _placeBid(address bidder, uint256 amount) internal virtual;

    /// @return finalPrice Reported in `AuctionFinished`.
    function _finalize() internal virtual returns (uint256 finalPrice);

    function _claim(address bidder) internal virtual {
        revert NothingToClaim(bidder);
    }

    function _shouldEnd() internal view virtual returns (bool) {
        return block.timestamp >= latestEndTime;
    }

    // ---------------------------------------------------------------- helpers

    function _sync() internal {
        if (status == AuctionStatus.Paused && block.timestamp >= pausedUntil) status = AuctionStatus.Running;
        if (status == AuctionStatus.Running && _shouldEnd()) _finish();
    }

    function _finish() internal {
        status = AuctionStatus.Ended;
        // A lazily applied time-out reports when it really ended, not when someone noticed.
        uint256 end = latestEndTime != 0 && latestEndTime < block.timestamp ? latestEndTime : block.timestamp;
        uint256 finalPrice = _finalize();
        emit AuctionFinished(end, finalPrice);
    }

    function _beginBid(uint256 amount) internal {
        _sync();
        if (status != AuctionStatus.Running) revert AuctionNotRunning(status);
        if (amount == 0) revert ZeroAmount();
        if (msg.sender == proposer || msg.sender == projectWallet) revert ProposerCannotBid(msg.sender);
    }

    /// @dev Pulls `amount` bid coin from the bidder (who must have approved this auction) and announces the bid
    ///      at `price`: bid coin per whole token, 0 where a type prices nothing at bid time (pseudo-capped).
    function _collect(address bidder, uint256 amount, address to, uint256 price) internal {
        bidCoin.safeTransferFrom(bidder, to, amount);
        totalDepositedSucoins += amount;
        _announceBid(bidder, amount, price);
        emit VariableChange("totalDepositedSucoins", totalDepositedSucoins);
    }

    /// @dev One `BidSubmission` per bid: this form, or the Dutch types' form with the price (their override).
    function _announceBid(address bidder, uint256 amount, uint256 /* price */) internal virtual {
        emit BidSubmission(bidder, amount);
    }

    /// @dev Every claim: `Claimed`, then the spec's `ClaimTokens` (round 0: one round per auction).
    function _announceClaim(address bidder, uint256 tokens, uint256 refund) internal {
        emit Claimed(bidder, tokens, refund);
        emit ClaimTokens(0, tokens);
    }

    function _sendTokens(address to, uint256 amount) internal {
        if (amount > 0) IERC20(address(projectToken)).safeTransfer(to, amount);
    }

    function _sendBidCoin(address to, uint256 amount) internal {
        if (amount > 0) bidCoin.safeTransfer(to, amount);
    }

    /// @dev Whole-unit purchase: token units that `amount` buys at `price`, rounded down.
    function _tokensFor(uint256 amount, uint256 price) internal view returns (uint256) {
        return Math.mulDiv(amount, _unit, price);
    }

    /// @dev What `tokens` cost at `price`, rounded up so the project is never short-changed.
    function _costOf(uint256 tokens, uint256 price) internal view returns (uint256) {
        return Math.mulDiv(tokens, price, _unit, Math.Rounding.Ceil);
    }

    /// @dev Running seconds left, frozen while paused. Zero before the start and after the end.
    function _remainingActive() internal view returns (uint256) {
        uint256 from = block.timestamp > pausedUntil ? block.timestamp : pausedUntil;
        return latestEndTime > from ? latestEndTime - from : 0;
    }
}
